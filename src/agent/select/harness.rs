//! The Python the engine runs around the model's `value` and `key` functions: each prints one
//! line of JSON the selection reads (`python.rs` defines the function in the sandbox first).

/// Runs the model's `value` on every record and prints one line: `{"values": [...], "dates":
/// bool}`, a number per record (`null` where it raised or gave no number). A date or a text that
/// holds one (`"2026-11-09"`, `vault-2025-03-02.tgz`, a `datetime`) counts as the number
/// `YYYYMMDDhhmmss`, which orders as the dates do, and `dates` says so: asked which backup is
/// the oldest, the model returns the date it reads in the name. A number with its unit
/// (`120ms`, `94%`, `$12.50`) is the number: the 1.5B model wrote `float(line.split()[2])`
/// over `GET /v2/items 95ms` (bench/README.md, stop 42).
pub(super) const VALUE: &str = r#"import datetime, json, math, re, sys
with open(sys.argv[2], encoding="utf-8") as f:
    items = json.load(f)
value = define(sys.argv[1], "value.py")["value"]
DATE = re.compile(r"(\d{4})-(\d{2})-(\d{2})(?:[ T](\d{2}):(\d{2})(?::(\d{2}))?)?")
dates = False
def dated(v):
    global dates
    y, mo, d, h, mi, s = (int(x) if x else 0 for x in DATE.search(v).groups())
    dates = True
    return float(((((y * 100 + mo) * 100 + d) * 100 + h) * 100 + mi) * 100 + s)
# A number written with its unit or currency: `120ms`, `94%`, `$12.50`, `1,200`.
UNIT = re.compile(r"[$€£¥]?\s*([-+]?\d[\d,]*(?:\.\d+)?)\s*[A-Za-z%µ/]*")
# The model writes `float(match.group())` over a date, and `float("120ms")` over a column:
# its `float` and `int` take both.
def lenient(kind):
    def convert(v=0, *rest):
        if isinstance(v, str) and not rest:
            s = v.strip()
            if DATE.fullmatch(s):
                return kind(dated(s))
            try:
                return kind(s)
            except ValueError:
                m = UNIT.fullmatch(s)
                if m is None:
                    raise
                return kind(float(m.group(1).replace(",", "")))
        return kind(v, *rest)
    return convert
value.__globals__["float"] = lenient(float)
value.__globals__["int"] = lenient(int)
number_of = lenient(float)
def number(item):
    try:
        v = value(item)
        if isinstance(v, bool):
            return None
        if isinstance(v, (datetime.date, datetime.datetime)):
            v = v.isoformat()
        if isinstance(v, str) and DATE.search(v):
            return dated(v)
        v = number_of(v) if isinstance(v, str) else float(v)
    except Exception:
        return None
    return v if math.isfinite(v) else None
values = [number(i) for i in items]
sys.stdout.write("\n" + json.dumps({"values": values, "dates": dates}) + "\n")
"#;

/// What [`VALUE`] prints.
#[derive(serde::Deserialize)]
pub(super) struct Values {
    pub values: Vec<Option<f64>>,
    pub dates: bool,
}

/// Runs the model's `key` on every record and prints one line: a JSON list of strings, `null`
/// where it raised or gave nothing.
pub(super) const KEY: &str = r#"import json, sys
with open(sys.argv[2], encoding="utf-8") as f:
    items = json.load(f)
key = define(sys.argv[1], "key.py")["key"]
def text(item):
    try:
        v = key(item)
    except Exception:
        return None
    # A pair (the user and the address) is keyed by its first part: the 1.5B model returned
    # `(username, ip_address)` for "which user".
    if isinstance(v, (tuple, list)):
        v = v[0] if v else None
    if v is None or isinstance(v, bool):
        return None
    v = str(v).strip()
    return v[:200] or None
sys.stdout.write("\n" + json.dumps([text(i) for i in items]) + "\n")
"#;
