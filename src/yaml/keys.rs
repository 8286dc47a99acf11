//! Unknown keys: a document walked against the JSON schema that `schemars`
//! derives from the target type, so every misspelled key at any depth is
//! reported with its location, not only the first.

use std::collections::HashMap;

use serde_json::Value as Json;

use super::display_path;
use super::source::{Node, NodeKind, SourceMap};
use crate::diag::{Diagnostic, Diagnostics, did_you_mean};

fn resolve<'a>(mut schema: &'a Json, root: &'a Json) -> &'a Json {
    for _ in 0..32 {
        let Some(r) = schema.get("$ref").and_then(Json::as_str) else {
            break;
        };
        let Some(name) = r.strip_prefix("#/$defs/") else {
            break;
        };
        match root.get("$defs").and_then(|d| d.get(name)) {
            Some(s) => schema = s,
            None => break,
        }
    }
    schema
}

/// The object shapes a schema allows (variants of an enum or an Option
/// flattened), each as (properties, additionalProperties).
fn object_shapes<'a>(schema: &'a Json, root: &'a Json, out: &mut Vec<&'a Json>) {
    let schema = resolve(schema, root);
    if schema.get("properties").is_some() || schema.get("additionalProperties").is_some() {
        out.push(schema);
    }
    for key in ["anyOf", "oneOf", "allOf"] {
        if let Some(subs) = schema.get(key).and_then(Json::as_array) {
            for s in subs {
                object_shapes(s, root, out);
            }
        }
    }
}

/// Reports every key of `node` (and below) that `schema` does not allow,
/// with a did-you-mean hint, and collects their paths in `unknown`.
pub(super) fn check_keys(
    source: &SourceMap,
    node: &Node,
    schema: &Json,
    root: &Json,
    path: &mut Vec<String>,
    diags: &mut Diagnostics,
    unknown: &mut Vec<Vec<String>>,
) {
    let schema = resolve(schema, root);
    match &node.kind {
        NodeKind::Scalar(_) => {}
        NodeKind::Seq(items) => {
            let mut item_schemas = Vec::new();
            collect_items(schema, root, &mut item_schemas);
            for (i, item) in items.iter().enumerate() {
                path.push(i.to_string());
                for s in &item_schemas {
                    check_keys(source, item, s, root, path, diags, unknown);
                }
                path.pop();
            }
        }
        NodeKind::Map(entries) => {
            let mut shapes = Vec::new();
            object_shapes(schema, root, &mut shapes);
            if shapes.is_empty() {
                return;
            }
            let mut known: HashMap<&str, &Json> = HashMap::new();
            let mut open: Option<&Json> = None;
            let mut closed = true;
            for shape in &shapes {
                if let Some(props) = shape.get("properties").and_then(Json::as_object) {
                    for (k, v) in props {
                        known.insert(k.as_str(), v);
                    }
                }
                match shape.get("additionalProperties") {
                    Some(Json::Bool(false)) => {}
                    Some(Json::Object(_)) => {
                        closed = false;
                        open = shape.get("additionalProperties");
                    }
                    _ => closed = false,
                }
            }
            for (k, v) in entries {
                let Some(name) = k.scalar_str() else { continue };
                if let Some(child) = known.get(name) {
                    path.push(name.to_string());
                    check_keys(source, v, child, root, path, diags, unknown);
                    path.pop();
                } else if let Some(child) = open {
                    path.push(name.to_string());
                    check_keys(source, v, child, root, path, diags, unknown);
                    path.pop();
                } else if closed {
                    let mut keys: Vec<&str> = known.keys().copied().collect();
                    keys.sort_unstable();
                    let location = if path.is_empty() {
                        String::new()
                    } else {
                        let p: Vec<&str> = path.iter().map(String::as_str).collect();
                        format!(" in `{}`", display_path(&p))
                    };
                    let d = Diagnostic::new(&source.file, k.line, k.col, format!("unknown field `{name}`{location}"));
                    let hint = match did_you_mean(name, keys.iter().copied()) {
                        Some(best) => format!("did you mean `{best}`?"),
                        None => format!("valid fields here: {}", keys.join(", ")),
                    };
                    diags.push(d.with_hint(hint));
                    let mut p = path.clone();
                    p.push(name.to_string());
                    unknown.push(p);
                }
            }
        }
    }
}

fn collect_items<'a>(schema: &'a Json, root: &'a Json, out: &mut Vec<&'a Json>) {
    let schema = resolve(schema, root);
    if let Some(items) = schema.get("items") {
        out.push(items);
    }
    for key in ["anyOf", "oneOf", "allOf"] {
        if let Some(subs) = schema.get(key).and_then(Json::as_array) {
            for s in subs {
                collect_items(s, root, out);
            }
        }
    }
}
