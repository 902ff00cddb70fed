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

/// The schema used when a tool declares none: any object.
pub fn empty_object_schema() -> Value {
    serde_json::json!({"type": "object", "properties": {}})
}
