//! What `ork init` writes, decided before anything is written: the CR type and the plan of
//! the folder, which the file makers read.

use serde_json::Value;

/// The CR type the operator reconciles.
#[derive(Debug, Clone)]
pub struct CrType {
    pub group: String,
    pub version: String,
    pub kind: String,
    pub plural: String,
    pub singular: String,
}

impl CrType {
    pub fn api_version(&self) -> String {
        format!("{}/{}", self.group, self.version)
    }
}

/// Everything the files are made from.
#[derive(Debug)]
pub struct Plan {
    pub name: String,
    pub cr_type: CrType,
    /// The sample CR as `cr.yaml` holds it: the type's apiVersion and kind, a name, the fields.
    pub sample: Value,
    /// The CR's OpenAPI schema.
    pub schema: Value,
    /// Whether the schema comes from a sample CR (else it is the minimal one).
    pub inferred: bool,
    pub python: bool,
    pub port: u16,
}
