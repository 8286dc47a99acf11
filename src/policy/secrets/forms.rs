//! The ways a secret appears in recorded text, and how long a piece of
//! each must be to count as the secret.
//!
//! A run of [`FRAGMENT_CHARS`] (8) characters of the plain value is a piece
//! of it. An encoded form is cut by the bytes it encodes: a piece is the
//! encoding of 8 bytes of the value, which is 16 hex digits, 24 characters
//! of full percent-encoding, and 10 base64 characters. Why 10: base64 of
//! bytes that start at offset 0, 1 or 2 of a 3-byte group has characters
//! that also carry bits of the neighbouring bytes, so only its inner part
//! is fixed whatever precedes or follows; 8 bytes always give exactly 10
//! such characters, so a window of 10 catches every 8-byte run, at every
//! alignment, as the plain rule catches every 8-character one. Ten base64
//! characters are 60 bits of the secret: unrelated base64 (a hash, an
//! image) holds a given window by chance with odds of 2^-60 per position,
//! and ordinary words do not look like the encoding of random bytes. A
//! whole encoded form must be at least 4 bytes' worth ([`MIN_SECRET_CHARS`]),
//! as a plain value must be 4 characters (base64: 5 characters, 30 bits).

use base64::Engine;
use base64::engine::general_purpose::STANDARD_NO_PAD;
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};

use super::{FRAGMENT_CHARS, MIN_SECRET_CHARS};

/// What stays outside the percent-encoding of a value (RFC 3986 unreserved).
const URL_KEEP: &AsciiSet = &NON_ALPHANUMERIC.remove(b'-').remove(b'.').remove(b'_').remove(b'~');

/// Base64 characters of one piece: the fixed inner part of 8 bytes.
const BASE64_WINDOW: usize = 10;

/// Base64 characters of the shortest whole form looked for: 30 bits, about
/// what the 4 characters of the shortest plain secret carry.
const BASE64_MIN: usize = 5;

/// One form of a value and how it is cut into patterns.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Form {
    pub(super) text: String,
    /// Characters of `text` in one piece.
    pub(super) window: usize,
    /// Pieces start at multiples of this (the characters of one encoded byte).
    pub(super) step: usize,
    /// A form shorter than this many characters is not looked for.
    pub(super) min: usize,
}

impl Form {
    /// A form read character by character, as the plain value is.
    fn plain(text: String) -> Form {
        Form { text, window: FRAGMENT_CHARS, step: 1, min: MIN_SECRET_CHARS }
    }

    /// A form that spends `chars` characters on each byte of the value.
    fn per_byte(text: String, chars: usize) -> Form {
        Form { text, window: 8 * chars, step: chars, min: MIN_SECRET_CHARS * chars }
    }
}

/// Every form of `value`: as is, JSON-escaped (in stored arguments and
/// payloads), percent-encoded (in URLs) both as a URL library does it and
/// byte by byte in either case, reversed, hex in either case, and base64 in
/// both alphabets at the three alignments. Forms equal to another are left
/// out.
pub(super) fn forms(value: &str) -> Vec<Form> {
    let mut forms = vec![Form::plain(value.to_string())];
    if let Ok(json) = serde_json::to_string(value) {
        let inner = json.get(1..json.len().saturating_sub(1)).unwrap_or_default();
        forms.push(Form::plain(inner.to_string()));
    }
    forms.push(Form::plain(utf8_percent_encode(value, URL_KEEP).to_string()));
    forms.push(Form::plain(value.chars().rev().collect()));
    let bytes = value.as_bytes();
    let every_byte: String = bytes.iter().map(|b| format!("%{b:02X}")).collect();
    forms.push(Form::per_byte(every_byte.to_ascii_lowercase(), 3));
    forms.push(Form::per_byte(every_byte, 3));
    let hex = hex::encode(bytes);
    forms.push(Form::per_byte(hex.to_ascii_uppercase(), 2));
    forms.push(Form::per_byte(hex, 2));
    for offset in 0..3 {
        let inner = base64_inner(bytes, offset);
        forms.push(Form {
            text: inner.replace('+', "-").replace('/', "_"),
            window: BASE64_WINDOW,
            step: 1,
            min: BASE64_MIN,
        });
        forms.push(Form { text: inner, window: BASE64_WINDOW, step: 1, min: BASE64_MIN });
    }
    let mut unique: Vec<Form> = Vec::with_capacity(forms.len());
    for form in forms {
        if !unique.iter().any(|f| f.text == form.text) {
            unique.push(form);
        }
    }
    unique
}

/// The standard base64 characters of `bytes` placed at `offset` (0, 1 or 2)
/// of a 3-byte group that carry bits of `bytes` alone: what appears in the
/// encoding of any text holding `bytes` at that offset, whatever precedes
/// or follows them.
pub(super) fn base64_inner(bytes: &[u8], offset: usize) -> String {
    let mut padded = vec![0u8; offset];
    padded.extend_from_slice(bytes);
    let encoded = STANDARD_NO_PAD.encode(&padded);
    // Character i holds bits 6i..6i+6 of the input.
    let (start_bit, end_bit) = (8 * offset, 8 * (offset + bytes.len()));
    let first = start_bit.div_ceil(6);
    let last = end_bit / 6;
    encoded.get(first..last.max(first)).unwrap_or_default().to_string()
}
