//! A task's webhook body as the sender would send it: a string as it is, anything else as
//! its JSON text with the keys in the order the task wrote them. (`serde_json::Value` sorts
//! keys, which made every eval payload alphabetical: Alertmanager's `status` came after
//! `annotations` and `labels`, which no real sender does.)

use std::fmt;

use schemars::JsonSchema;
use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::{SerializeMap, SerializeSeq, Serializer};
use serde::{Deserialize, Serialize};

/// The text of a webhook body.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Body(pub String);

impl<'de> Deserialize<'de> for Body {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(Body(match Doc::deserialize(d)? {
            Doc::Null => String::new(),
            Doc::Str(s) => s,
            other => serde_json::to_string(&other).map_err(de::Error::custom)?,
        }))
    }
}

impl JsonSchema for Body {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "WebhookBody".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "The request body: a string as it is, anything else as its JSON text (keys in the order written)."
        })
    }
}

/// Any YAML value, maps in document order.
enum Doc {
    Null,
    Bool(bool),
    I64(i64),
    U64(u64),
    F64(f64),
    Str(String),
    Seq(Vec<Doc>),
    Map(Vec<(String, Doc)>),
}

impl<'de> Deserialize<'de> for Doc {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(DocVisitor)
    }
}

struct DocVisitor;

impl<'de> Visitor<'de> for DocVisitor {
    type Value = Doc;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a string, a number, a boolean, null, a list or a mapping")
    }
    fn visit_unit<E>(self) -> Result<Doc, E> {
        Ok(Doc::Null)
    }
    fn visit_none<E>(self) -> Result<Doc, E> {
        Ok(Doc::Null)
    }
    fn visit_bool<E>(self, v: bool) -> Result<Doc, E> {
        Ok(Doc::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Doc, E> {
        Ok(Doc::I64(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Doc, E> {
        Ok(Doc::U64(v))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Doc, E> {
        Ok(Doc::F64(v))
    }
    fn visit_str<E>(self, v: &str) -> Result<Doc, E> {
        Ok(Doc::Str(v.to_string()))
    }
    fn visit_string<E>(self, v: String) -> Result<Doc, E> {
        Ok(Doc::Str(v))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Doc, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Doc::Seq(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Doc, A::Error> {
        let mut entries: Vec<(String, Doc)> = Vec::new();
        while let Some((key, value)) = map.next_entry::<MapKey, Doc>()? {
            if entries.iter().any(|(k, _)| *k == key.0) {
                return Err(de::Error::custom(format!("the key `{}` appears twice", key.0)));
            }
            entries.push((key.0, value));
        }
        Ok(Doc::Map(entries))
    }
}

/// A mapping key as JSON has it: a string; YAML's numbers and booleans as their text.
struct MapKey(String);

impl<'de> Deserialize<'de> for MapKey {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Doc::deserialize(d)? {
            Doc::Str(s) => Ok(MapKey(s)),
            Doc::Bool(b) => Ok(MapKey(b.to_string())),
            Doc::I64(n) => Ok(MapKey(n.to_string())),
            Doc::U64(n) => Ok(MapKey(n.to_string())),
            Doc::F64(n) => Ok(MapKey(n.to_string())),
            _ => Err(de::Error::custom("a mapping key of a body must be a string, a number or a boolean")),
        }
    }
}

impl Serialize for Doc {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Doc::Null => s.serialize_unit(),
            Doc::Bool(b) => s.serialize_bool(*b),
            Doc::I64(n) => s.serialize_i64(*n),
            Doc::U64(n) => s.serialize_u64(*n),
            Doc::F64(n) => s.serialize_f64(*n),
            Doc::Str(v) => s.serialize_str(v),
            Doc::Seq(items) => {
                let mut seq = s.serialize_seq(Some(items.len()))?;
                for item in items {
                    seq.serialize_element(item)?;
                }
                seq.end()
            }
            Doc::Map(entries) => {
                let mut map = s.serialize_map(Some(entries.len()))?;
                for (k, v) in entries {
                    map.serialize_entry(k, v)?;
                }
                map.end()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Deserialize, JsonSchema)]
    struct Hook {
        #[serde(default)]
        body: Body,
    }

    fn parse(yaml: &str) -> Result<String, crate::diag::Diagnostics> {
        crate::yaml::from_str::<Hook>(std::path::Path::new("task.yaml"), yaml).map(|l| l.value.body.0)
    }

    fn body(yaml: &str) -> String {
        let indented: String = yaml.lines().map(|l| format!("  {l}\n")).collect();
        parse(&format!("body:\n{indented}")).unwrap()
    }

    #[test]
    fn keys_keep_the_order_they_were_written_in() {
        let yaml = "receiver: ops\nstatus: firing\nalerts:\n  - status: firing\n    labels: { alertname: Disk, instance: db-2 }\n    \
                    annotations: { summary: \"at 94%\" }\n";
        assert_eq!(
            body(yaml),
            r#"{"receiver":"ops","status":"firing","alerts":[{"status":"firing","labels":{"alertname":"Disk","instance":"db-2"},"annotations":{"summary":"at 94%"}}]}"#
        );
    }

    #[test]
    fn scalars_strings_and_null() {
        assert_eq!(body("\"raw text, as it is\""), "raw text, as it is");
        assert_eq!(body("null"), "");
        assert_eq!(parse("{}").unwrap(), "", "no body");
        assert_eq!(
            body("{ n: 3, x: -1, f: 1.5, ok: true, none: null, 8: eight }"),
            r#"{"n":3,"x":-1,"f":1.5,"ok":true,"none":null,"8":"eight"}"#
        );
    }

    #[test]
    fn a_key_written_twice_is_an_error() {
        assert!(parse("body: { a: 1, a: 2 }").is_err());
    }
}
