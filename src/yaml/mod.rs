//! The one module that knows YAML.
//!
//! `serde_yaml` turns text into typed values; `yaml-rust2`'s event parser
//! gives every node its line and column, which serde_yaml does not expose.
//! Together they let [`from_str`] report *every* problem in a file at once,
//! each with `FILE:LINE:COL`:
//!
//! 1. syntax errors, with the parser's location;
//! 2. unknown keys at any depth, found by walking the document against the
//!    JSON schema that `schemars` derives from the target type, each with a
//!    did-you-mean hint;
//! 3. type errors, one per top-level key, located through the path that
//!    `serde_path_to_error` reports.
//!
//! Callers then run semantic checks on the typed value and use
//! [`SourceMap::locate`] to place their own diagnostics.

mod keys;
mod source;

use std::path::Path;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;

use crate::diag::{Diagnostic, Diagnostics, did_you_mean};
use keys::check_keys;
use source::parse_nodes;
pub use source::{Node, NodeKind, SourceMap, Style};

/// A typed value together with the positions of the text it came from.
#[derive(Debug, Clone)]
pub struct Loaded<T> {
    pub value: T,
    pub source: SourceMap,
}

/// Parses `text` (the contents of `file`) into `T`, reporting every problem.
pub fn from_str<T>(file: &Path, text: &str) -> Result<Loaded<T>, Diagnostics>
where
    T: DeserializeOwned + JsonSchema,
{
    let root = parse_nodes(file, text).map_err(|d| Diagnostics(vec![d]))?;
    let source = SourceMap { file: file.to_path_buf(), root };
    let value: serde_yaml::Value = if text.trim().is_empty() {
        serde_yaml::Value::Mapping(Default::default())
    } else {
        match serde_yaml::from_str(text) {
            Ok(serde_yaml::Value::Null) => serde_yaml::Value::Mapping(Default::default()),
            Ok(v) => v,
            Err(e) => {
                let (line, col) = e.location().map_or((1, 1), |l| (l.line(), l.column()));
                return Err(Diagnostics(vec![
                    Diagnostic::new(file, line, col, format!("invalid YAML: {}", strip_location(&e.to_string())))
                        .with_hint(SYNTAX_HINT),
                ]));
            }
        }
    };

    let mut diags = Diagnostics::default();
    let schema = schemars::schema_for!(T);
    let schema = schema.as_value();
    let mut unknown: Vec<Vec<String>> = Vec::new();
    check_keys(&source, &source.root, schema, schema, &mut Vec::new(), &mut diags, &mut unknown);

    // Unknown keys are reported already; without them serde can show what
    // else is wrong. After each type error, the offending entry is removed
    // and serde runs again, so every error surfaces, not only the first.
    let mut value = value;
    for path in &unknown {
        remove_path(&mut value, path);
    }
    let mut removed: Vec<Vec<String>> = Vec::new();
    for _ in 0..64 {
        let e = match deserialize::<T>(value.clone()) {
            Ok(v) if diags.is_empty() => return Ok(Loaded { value: v, source }),
            Ok(_) => break,
            Err(e) => e,
        };
        if let Some(field) = e.message.strip_prefix("missing field `").and_then(|r| r.split('`').next()) {
            let mut p = e.path.clone();
            p.push(field.to_string());
            if removed.contains(&p) {
                break; // a field we removed ourselves; already reported
            }
        }
        let mut target = e.path.clone();
        while target.last().is_some_and(|seg| seg.parse::<usize>().is_ok()) {
            target.pop(); // removing a list item would shift the others
        }
        diags.push(e.into_diagnostic(&source));
        if target.is_empty() || !remove_path(&mut value, &target) {
            break;
        }
        removed.push(target);
    }
    Err(diags.sorted())
}

/// Removes the entry at `path` (mapping keys and list indices); true if found.
fn remove_path(value: &mut serde_yaml::Value, path: &[String]) -> bool {
    let Some((last, parents)) = path.split_last() else { return false };
    let mut node = value;
    for seg in parents {
        let next = match node {
            serde_yaml::Value::Mapping(m) => m.get_mut(seg.as_str()),
            serde_yaml::Value::Sequence(items) => seg.parse::<usize>().ok().and_then(|i| items.get_mut(i)),
            serde_yaml::Value::Tagged(t) => Some(&mut t.value),
            _ => None,
        };
        match next {
            Some(n) => node = n,
            None => return false,
        }
    }
    match node {
        serde_yaml::Value::Mapping(m) => m.remove(last.as_str()).is_some(),
        _ => false,
    }
}

struct TypeError {
    path: Vec<String>,
    message: String,
    hint: Option<String>,
}

impl TypeError {
    fn into_diagnostic(self, source: &SourceMap) -> Diagnostic {
        let path: Vec<&str> = self.path.iter().map(String::as_str).collect();
        let mut message = self.message;
        if !path.is_empty() {
            message = format!("{message} (at `{}`)", display_path(&path));
        }
        let d = source.error_at(&path, message);
        match self.hint {
            Some(h) => d.with_hint(h),
            None => d,
        }
    }
}

/// Externally tagged enums are written as one-key mappings (`- file: {...}`),
/// which serde_yaml 0.9 reads only through `singleton_map_recursive`.
fn deserialize<T: DeserializeOwned>(value: serde_yaml::Value) -> Result<T, TypeError> {
    let mut track = serde_path_to_error::Track::new();
    let de = serde_path_to_error::Deserializer::new(value, &mut track);
    let result: Result<T, serde_yaml::Error> = serde_yaml::with::singleton_map_recursive::deserialize(de);
    result.map_err(|e| {
        let path: Vec<String> = track
            .path()
            .iter()
            .filter_map(|seg| match seg {
                serde_path_to_error::Segment::Seq { index } => Some(index.to_string()),
                serde_path_to_error::Segment::Map { key } => Some(key.clone()),
                serde_path_to_error::Segment::Enum { variant } => Some(variant.clone()),
                serde_path_to_error::Segment::Unknown => None,
            })
            .collect();
        let message = strip_location(&e.to_string());
        let hint = variant_hint(&message).or_else(|| type_hint(&message));
        TypeError { path, message, hint }
    })
}

/// serde_yaml appends " at line L column C"; we place locations ourselves.
fn strip_location(message: &str) -> String {
    match message.find(" at line ") {
        Some(i) => message[..i].to_string(),
        None => message.to_string(),
    }
}

/// For "unknown variant `x`, expected one of `a`, `b`" suggest the nearest.
fn variant_hint(message: &str) -> Option<String> {
    let rest = message.strip_prefix("unknown variant `")?;
    let (got, expected) = rest.split_once('`')?;
    let options: Vec<&str> = expected.split('`').skip(1).step_by(2).collect();
    match did_you_mean(got, options.iter().copied()) {
        Some(best) => Some(format!("did you mean `{best}`?")),
        None if !options.is_empty() => Some(format!("expected one of: {}", options.join(", "))),
        None => None,
    }
}

/// For "invalid type: ..., expected X", how to write an X.
fn type_hint(message: &str) -> Option<String> {
    if !message.starts_with("invalid type: ") && !message.starts_with("invalid value: ") {
        return None;
    }
    let expected = message.rsplit_once(", expected ")?.1;
    let hint = match expected {
        "a boolean" => "write true or false",
        "u8" | "u16" | "u32" | "u64" | "usize" | "i8" | "i16" | "i32" | "i64" | "isize" => {
            "write a whole number, e.g. 3"
        }
        "f32" | "f64" => "write a number, e.g. 0.7",
        "a string" => "write a single text value; quote it if it contains `: ` or starts with a special character",
        "a sequence" => "write a list: [a, b], or one `- item` per line",
        e if e.starts_with("struct ") || e.starts_with("a map") => "write a mapping: one `key: value` per line",
        _ => return None,
    };
    Some(hint.to_string())
}

const SYNTAX_HINT: &str = "check the indentation, quotes and brackets on this line and the ones before it";

/// A path into a document as a person reads it: `deliver[0].file.path` for
/// `["deliver", "0", "file", "path"]`.
pub fn display_path(path: &[&str]) -> String {
    let mut out = String::new();
    for seg in path {
        if seg.parse::<usize>().is_ok() {
            out.push_str(&format!("[{seg}]"));
        } else {
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(seg);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Deserialize, JsonSchema, PartialEq)]
    #[serde(deny_unknown_fields)]
    struct Inner {
        model: Option<String>,
        retries: Option<u32>,
    }

    #[derive(Debug, Deserialize, JsonSchema, PartialEq)]
    #[serde(deny_unknown_fields)]
    struct Outer {
        name: Option<String>,
        provider: Option<Inner>,
        items: Option<Vec<Inner>>,
        mode: Option<Mode>,
    }

    #[derive(Debug, Deserialize, JsonSchema, PartialEq)]
    #[serde(rename_all = "snake_case")]
    enum Mode {
        Native,
        Json,
    }

    fn load(text: &str) -> Result<Outer, Vec<String>> {
        from_str::<Outer>(Path::new("c.yaml"), text)
            .map(|l| l.value)
            .map_err(|d| d.0.iter().map(ToString::to_string).collect())
    }

    #[test]
    fn loads_a_valid_document() {
        let v = load("name: x\nprovider:\n  model: m\n").unwrap();
        assert_eq!(v.provider.unwrap().model.as_deref(), Some("m"));
    }

    #[test]
    fn empty_document_is_an_empty_mapping() {
        let v = load("# only a comment\n").unwrap();
        assert_eq!(v.name, None);
    }

    #[test]
    fn reports_every_unknown_key_with_location_and_hint() {
        let errs = load("nmae: x\nprovider:\n  modle: m\nitems:\n  - model: a\n  - retires: 2\n").unwrap_err();
        assert_eq!(
            errs,
            vec![
                "c.yaml:1:1: unknown field `nmae`\n  help: did you mean `name`?".to_string(),
                "c.yaml:3:3: unknown field `modle` in `provider`\n  help: did you mean `model`?".to_string(),
                "c.yaml:6:5: unknown field `retires` in `items[1]`\n  help: did you mean `retries`?".to_string(),
            ]
        );
    }

    #[test]
    fn reports_type_errors_of_several_sections() {
        let errs = load("provider:\n  retries: many\nmode: jsno\n").unwrap_err();
        assert_eq!(errs.len(), 2, "{errs:?}");
        assert!(errs[0].starts_with("c.yaml:2:12: invalid type: string \"many\", expected u32"), "{errs:?}");
        assert_eq!(
            errs[1],
            "c.yaml:3:7: unknown variant `jsno`, expected `native` or `json` (at `mode`)\n  help: did you mean `json`?"
        );
    }

    #[test]
    fn reports_every_type_error_of_one_section_and_of_lists() {
        let errs = load("provider:\n  model: [a]\n  retries: x\n  modle: y\nitems:\n  - retries: z\n").unwrap_err();
        assert_eq!(errs.len(), 4, "{errs:?}");
        assert!(
            errs[0].starts_with("c.yaml:2:10: invalid type: sequence, expected a string (at `provider.model`)"),
            "{errs:?}"
        );
        assert!(errs[1].starts_with("c.yaml:3:12: invalid type: string \"x\", expected u32"), "{errs:?}");
        assert!(errs[2].starts_with("c.yaml:4:3: unknown field `modle`"), "{errs:?}");
        assert!(
            errs[3].starts_with("c.yaml:6:14: invalid type: string \"z\", expected u32 (at `items[0].retries`)"),
            "{errs:?}"
        );
    }

    #[test]
    fn reports_syntax_errors_with_location() {
        let errs = load("provider:\n  model: [unclosed\n").unwrap_err();
        assert_eq!(errs.len(), 1);
        assert!(errs[0].starts_with("c.yaml:3:1: invalid YAML"), "{errs:?}");
    }

    #[test]
    fn locates_paths_and_falls_back_to_ancestors() {
        let loaded = from_str::<Outer>(Path::new("c.yaml"), "name: x\nprovider:\n  model: m\n").unwrap();
        assert_eq!(loaded.source.locate(&["provider", "model"]), (3, 10));
        assert_eq!(loaded.source.locate_key(&["provider", "model"]), (3, 3));
        assert_eq!(loaded.source.locate(&["provider", "missing"]), (3, 3));
    }
}
