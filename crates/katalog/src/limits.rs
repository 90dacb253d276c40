//! How large a Katalog may be, checked before anything is parsed (for the Katalog and the CRD
//! files it names alike), and the bounds of its numbers: each bound is one constant that both
//! the check in `validate` (and its message) and the published JSON Schema use, so the two
//! cannot disagree.

/// The Katalog's `apiVersion`.
pub const API_VERSION: &str = "orkestra.orkspace.io/v1";
/// The Katalog's `kind`.
pub const KIND: &str = "Katalog";
/// The `apiVersion` of inrun's Catalog, as Orkestra was renamed: read as [`API_VERSION`].
pub const INRUN_API_VERSION: &str = "inrun.dev/v1";
/// The `kind` of inrun's Catalog: read as [`KIND`].
pub const INRUN_KIND: &str = "Catalog";
/// Every `apiVersion` ork reads a Katalog under (Orkestra's, then inrun's).
pub const API_VERSIONS: [&str; 2] = [API_VERSION, INRUN_API_VERSION];
/// Every `kind` ork reads a Katalog under (Orkestra's, then inrun's).
pub const KINDS: [&str; 2] = [KIND, INRUN_KIND];
/// The one `mode` ork reads (Orkestra's `typed` compiles Go types in).
pub const DYNAMIC_MODE: &str = "dynamic";
/// The one HTTP `remote.type` (Orkestra's `grpc` is reserved there too).
pub const HTTP_TRANSPORT: &str = "http";

/// Largest Katalog (and CRD) file ork reads: refused before parsing.
pub const MAX_FILE_BYTES: u64 = 4 * 1024 * 1024;
/// Deepest nesting (maps, lists, flow collections) a Katalog may have: refused before parsing.
pub const MAX_NESTING: usize = 40;

/// Fewest `operatorBox.reconcile.workers`.
pub const MIN_WORKERS: u32 = 1;
/// Most `operatorBox.reconcile.workers`.
pub const MAX_WORKERS: u32 = 64;
/// Smallest `queue.failureThreshold`.
pub const MIN_FAILURE_THRESHOLD: u32 = 1;
/// Smallest `queue.maxAttempts` and `queue.retryBackoff.maxAttempts` (the first call counts).
pub const MIN_ATTEMPTS: u32 = 1;
/// Smallest `queue.retryBackoff.multiplier` (1: every retry waits `initial`).
pub const MIN_MULTIPLIER: f64 = 1.0;
/// Largest `queue.retryBackoff.multiplier`.
pub const MAX_MULTIPLIER: f64 = 10.0;
/// Smallest `remote.rateLimit.qps` (calls per second).
pub const MIN_QPS: f64 = 0.001;
/// Largest `remote.rateLimit.qps` (calls per second).
pub const MAX_QPS: f64 = 1_000_000.0;
/// Smallest `remote.rateLimit.burst`.
pub const MIN_BURST: u32 = 1;
/// Largest `remote.rateLimit.burst`.
pub const MAX_BURST: u32 = 1_000_000;
/// Smallest `remote.maxResponseBytes`.
pub const MIN_RESPONSE_BYTES: u64 = 1;

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    /// `(minimum, maximum)` of a property of a type in the Katalog's JSON Schema.
    fn bounds(schema: &Value, ty: &str, property: &str) -> (Value, Value) {
        let p = &schema["$defs"][ty]["properties"][property];
        assert!(p.is_object(), "{ty}.{property} is in the schema");
        (p["minimum"].clone(), p["maximum"].clone())
    }

    #[test]
    fn the_katalog_schema_carries_the_bounds_validation_checks() {
        let schema = serde_json::to_value(schemars::schema_for!(crate::Katalog)).expect("JSON");
        let none = Value::Null;
        for (ty, property, min, max) in [
            (
                "Reconcile",
                "workers",
                json!(MIN_WORKERS),
                json!(MAX_WORKERS),
            ),
            (
                "Queue",
                "failureThreshold",
                json!(MIN_FAILURE_THRESHOLD),
                none.clone(),
            ),
            ("Queue", "maxAttempts", json!(MIN_ATTEMPTS), none.clone()),
            (
                "RetryBackoffFields",
                "maxAttempts",
                json!(MIN_ATTEMPTS),
                none.clone(),
            ),
            (
                "RetryBackoffFields",
                "multiplier",
                json!(MIN_MULTIPLIER),
                json!(MAX_MULTIPLIER),
            ),
            ("RateLimit", "qps", json!(MIN_QPS), json!(MAX_QPS)),
            ("RateLimit", "burst", json!(MIN_BURST), json!(MAX_BURST)),
            (
                "Remote",
                "maxResponseBytes",
                json!(MIN_RESPONSE_BYTES),
                none.clone(),
            ),
        ] {
            assert_eq!(bounds(&schema, ty, property), (min, max), "{ty}.{property}");
        }
        assert_eq!(
            bounds(&schema, "Reconcile", "workers"),
            (json!(1), json!(64)),
            "workers: 1 to 64"
        );
        // `retryBackoff` is published through its map form, bounds and all.
        let backoff = schema["$defs"]["RetryBackoff"].to_string();
        assert!(backoff.contains("RetryBackoffFields"), "{backoff}");
        assert_eq!(
            schema["properties"]["apiVersion"]["enum"],
            json!(["orkestra.orkspace.io/v1", "inrun.dev/v1"])
        );
        assert_eq!(
            schema["properties"]["kind"]["enum"],
            json!(["Katalog", "Catalog"])
        );
    }
}
