//! JSON Schema checks for tool inputs: a schema must be valid JSON Schema (checked at install
//! and load), and arguments are validated against it before any tool runs.

use serde_json::Value;

/// A compiled input schema.
pub struct InputSchema {
    validator: jsonschema::Validator,
}

impl InputSchema {
    /// Compile `schema`; the error says why it is not a valid JSON Schema.
    pub fn compile(schema: &Value) -> Result<Self, String> {
        // References to other documents are not resolved (no network, no file reads).
        jsonschema::meta::validate(schema).map_err(|e| {
            format!(
                "invalid JSON Schema at {}: {}",
                pointer_or_root(&e.instance_path().to_string()),
                e
            )
        })?;
        let validator = jsonschema::validator_for(schema).map_err(|e| format!("invalid JSON Schema: {e}"))?;
        Ok(Self { validator })
    }

    /// Validate arguments; the error names each failing path, e.g. `/comments: "x" is not of type "integer"`.
    pub fn check(&self, args: &Value) -> Result<(), String> {
        let errors: Vec<String> = self
            .validator
            .iter_errors(args)
            .map(|e| format!("{}: {}", pointer_or_root(&e.instance_path().to_string()), e))
            .collect();
        if errors.is_empty() {
            Ok(())
        } else {
            Err(errors.join("; "))
        }
    }
}

fn pointer_or_root(p: &str) -> String {
    if p.is_empty() {
        "(root)".to_string()
    } else {
        p.to_string()
    }
}

/// P8: turn the arguments into a correctly typed object per the schema. A string where the
/// schema asks for an integer, number or boolean is converted when it parses (`"3"` → `3`,
/// `"true"` → `true`), in nested objects and array items too. Anything else is left alone for
/// validation to report.
pub fn coerce(schema: &Value, value: &mut Value) {
    match value {
        Value::Object(map) => {
            if let Some(props) = schema.get("properties").and_then(Value::as_object) {
                for (key, v) in map.iter_mut() {
                    if let Some(s) = props.get(key) {
                        coerce(s, v);
                    }
                }
            }
        }
        Value::Array(items) => {
            if let Some(s) = schema.get("items") {
                for v in items {
                    coerce(s, v);
                }
            }
        }
        Value::String(text) => {
            let t = text.trim();
            let typed = match schema.get("type").and_then(Value::as_str) {
                Some("integer") => t.parse::<i64>().ok().map(Value::from),
                Some("number") => t.parse::<i64>().ok().map(Value::from).or_else(|| {
                    t.parse::<f64>()
                        .ok()
                        .and_then(serde_json::Number::from_f64)
                        .map(Value::Number)
                }),
                Some("boolean") => match t {
                    "true" => Some(Value::Bool(true)),
                    "false" => Some(Value::Bool(false)),
                    _ => None,
                },
                _ => None,
            };
            if let Some(v) = typed {
                *value = v;
            }
        }
        _ => {}
    }
}

/// The schema used when a tool declares none: any object.
pub fn empty_object_schema() -> Value {
    serde_json::json!({"type": "object", "properties": {}})
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn p8_coerces_strings_to_the_schema_types() {
        let schema = json!({"type": "object", "properties": {
            "key": {"type": "string"}, "comments": {"type": "integer"}, "ratio": {"type": "number"},
            "all": {"type": "boolean"}, "ids": {"type": "array", "items": {"type": "integer"}},
            "inner": {"type": "object", "properties": {"n": {"type": "integer"}}}}});
        let mut args = json!({"key": "CST-42", "comments": "3", "ratio": "0.5", "all": "true",
            "ids": ["1", 2], "inner": {"n": " 7 "}});
        coerce(&schema, &mut args);
        assert_eq!(
            args,
            json!({"key": "CST-42", "comments": 3, "ratio": 0.5, "all": true, "ids": [1, 2], "inner": {"n": 7}})
        );
        let mut bad = json!({"comments": "three"});
        coerce(&schema, &mut bad);
        assert_eq!(bad, json!({"comments": "three"}), "left for validation to report");
        let compiled = InputSchema::compile(&schema).expect("schema");
        assert!(compiled.check(&bad).unwrap_err().contains("/comments"));
    }
}
