//! The functions every template can call: Go's built-ins and the pure notes Orkestra registers
//! in its resolver (strings, math, conditionals, types, collections, Kubernetes object helpers,
//! data encodings, `inCluster`). Arguments are converted leniently (a missing value is the
//! zero value) where Go would stop with a type error.
//!
//! [`BUILTINS`] is the one list: it dispatches a call, checks the argument count, and yields the
//! names validation and suggestions use ([`NAMES`]).

mod collections;
mod data;
mod go;
mod math;
mod objects;
mod strings;
mod types;

use serde_json::Value;

use super::args::{Call, arity, at_least};
use super::context::Facts;
use super::error::TemplateError;
use super::pick;
use super::value::{Meter, Val};
use Arity::{Any, AtLeast, Exactly};
use Body::{Lazy, Make, Pick};

/// A built-in function: its name, how many arguments it takes, and what it does.
pub(super) struct Builtin {
    pub name: &'static str,
    pub arity: Arity,
    pub body: Body,
}

/// How many arguments a built-in takes, checked before it runs.
#[derive(Clone, Copy)]
pub(super) enum Arity {
    Exactly(usize),
    AtLeast(usize),
    /// Any number, or a count the function checks itself (`trim`, `slice`'s upper bound).
    Any,
}

/// What a built-in does with its arguments.
#[derive(Clone, Copy)]
pub(super) enum Body {
    /// Evaluated by the evaluator itself, which must not evaluate every argument first.
    Lazy,
    /// Returns one of its arguments or a part of one, passed on as it came (see `pick`).
    Pick(for<'c> fn(&str, &[Val<'c>], &Meter) -> Result<Val<'c>, TemplateError>),
    /// Makes a new value from its arguments.
    Make(fn(&Call<'_>) -> Result<Value, TemplateError>),
}

/// A table row.
const fn b(name: &'static str, arity: Arity, body: Body) -> Builtin {
    Builtin { name, arity, body }
}

/// Every built-in, in the order validation lists them.
pub(super) const BUILTINS: &[Builtin] = &[
    // Go text/template built-ins
    b("and", Any, Lazy),
    b("or", Any, Lazy),
    b("not", Exactly(1), Make(go::not)),
    b("len", Exactly(1), Make(go::len)),
    b("index", AtLeast(1), Pick(pick::index_all)),
    b("slice", AtLeast(1), Make(go::slice)),
    b("print", Any, Make(go::print)),
    b("printf", AtLeast(1), Make(go::printf)),
    b("println", Any, Make(go::println)),
    b("eq", AtLeast(2), Make(go::eq)),
    b("ne", Exactly(2), Make(go::ne)),
    b("lt", Exactly(2), Make(go::ordered)),
    b("le", Exactly(2), Make(go::ordered)),
    b("gt", Exactly(2), Make(go::ordered)),
    b("ge", Exactly(2), Make(go::ordered)),
    b("html", Any, Make(go::html)),
    b("js", Any, Make(go::js)),
    b("urlquery", Any, Make(go::urlquery)),
    // ork's own (kept from earlier ork versions)
    b("lower", Exactly(1), Make(strings::lower)),
    b("upper", Exactly(1), Make(strings::upper)),
    b("quote", Exactly(1), Make(strings::quote)),
    // Orkestra notes: strings
    b("toLower", Exactly(1), Make(strings::lower)),
    b("toUpper", Exactly(1), Make(strings::upper)),
    b("trimSpace", Exactly(1), Make(strings::trim_space)),
    b("trim", Any, Make(strings::trim)),
    b("trimPrefix", Exactly(2), Make(strings::trim_prefix)),
    b("trimSuffix", Exactly(2), Make(strings::trim_suffix)),
    b("hasPrefix", Exactly(2), Make(strings::has_prefix)),
    b("hasSuffix", Exactly(2), Make(strings::has_suffix)),
    b("contains", Exactly(2), Make(strings::contains)),
    b("replace", Exactly(3), Make(strings::replace)),
    b("split", Exactly(2), Make(strings::split)),
    b("join", Exactly(2), Make(strings::join)),
    b("repeat", Exactly(2), Make(strings::repeat)),
    b("camelToKebab", Exactly(1), Make(strings::kebab)),
    b("truncate", Exactly(2), Make(strings::truncate)),
    // math
    b("add", Exactly(2), Make(math::arithmetic)),
    b("sub", Exactly(2), Make(math::arithmetic)),
    b("mul", Exactly(2), Make(math::arithmetic)),
    b("div", Exactly(2), Make(math::arithmetic)),
    b("mod", Exactly(2), Make(math::arithmetic)),
    b("min", Exactly(2), Make(math::arithmetic)),
    b("max", Exactly(2), Make(math::arithmetic)),
    b("clamp", Exactly(3), Make(math::clamp)),
    b("abs", Exactly(1), Make(math::abs)),
    // conditionals
    b("ternary", Exactly(3), Pick(pick::ternary)),
    b("boolTernary", Exactly(3), Pick(pick::bool_ternary)),
    b("boolDefault", Exactly(2), Make(collections::get_bool_or)),
    b("eqTernary", Exactly(4), Pick(pick::eq_ternary)),
    b("coalesce", Any, Pick(pick::coalesce)),
    b("default", Any, Pick(pick::default_value)),
    b("empty", Exactly(1), Make(types::empty_test)),
    b("notEmpty", Exactly(1), Make(types::not_empty)),
    // types
    b("toInt", Exactly(1), Make(types::to_int)),
    b("toFloat", Exactly(1), Make(types::to_float)),
    b("toBool", Exactly(1), Make(types::to_bool)),
    b("toString", Exactly(1), Pick(pick::to_string_value)),
    b("toJson", Exactly(1), Make(types::to_json)),
    b("toList", Exactly(1), Make(types::to_list)),
    b("typeOf", Exactly(1), Make(types::type_of_value)),
    b("typeMap", Exactly(1), Make(types::type_is)),
    b("typeList", Exactly(1), Make(types::type_is)),
    b("typeString", Exactly(1), Make(types::type_is)),
    b("typeNumber", Exactly(1), Make(types::type_is)),
    b("typeBool", Exactly(1), Make(types::type_is)),
    b("typeNull", Exactly(1), Make(types::type_is)),
    b("isEmpty", Exactly(1), Make(types::is_empty)),
    b("isScalar", Exactly(1), Make(types::is_scalar)),
    b("isComposite", Exactly(1), Make(types::is_composite)),
    // collections
    b("listHas", Exactly(2), Make(collections::list_has)),
    b("listGet", Exactly(2), Pick(pick::list_get)),
    b("listLen", Exactly(1), Make(collections::list_len)),
    b("mapGet", Exactly(2), Pick(pick::map_get)),
    b("mapKeys", Exactly(1), Make(collections::map_keys)),
    b("mapValues", Exactly(1), Make(collections::map_values)),
    b("mapPick", AtLeast(1), Make(collections::map_pick_or_omit)),
    b("mapOmit", AtLeast(1), Make(collections::map_pick_or_omit)),
    b("asList", Exactly(1), Pick(pick::as_list)),
    b("asMap", Exactly(1), Pick(pick::as_map)),
    b("asString", Exactly(1), Pick(pick::as_string)),
    // safe access
    b("getOr", Exactly(2), Pick(pick::get_or)),
    b("getStringOr", Exactly(2), Pick(pick::get_string_or)),
    b("getIntOr", Exactly(2), Make(collections::get_int_or)),
    b("getBoolOr", Exactly(2), Make(collections::get_bool_or)),
    // Kubernetes objects
    b("meta", Exactly(1), Pick(pick::meta)),
    b("name", Exactly(1), Make(objects::name_of)),
    b("namespace", Exactly(1), Make(objects::namespace_of)),
    b("labels", Exactly(1), Pick(pick::meta_map)),
    b("annotations", Exactly(1), Pick(pick::meta_map)),
    b("getLabel", Exactly(2), Make(objects::meta_map_value)),
    b("getLabelInt", Exactly(2), Make(objects::meta_map_int)),
    b("hasLabel", Exactly(2), Make(objects::meta_map_has)),
    b("getAnnotation", Exactly(2), Make(objects::meta_map_value)),
    b("getAnnotationInt", Exactly(2), Make(objects::meta_map_int)),
    b("hasAnnotation", Exactly(2), Make(objects::meta_map_has)),
    b("labelMatches", AtLeast(1), Make(objects::label_matches)),
    b("spec", Exactly(1), Pick(pick::section_of)),
    b("status", Exactly(1), Pick(pick::section_of)),
    b("getStatus", Exactly(2), Make(objects::get_status)),
    b("hasStatus", Exactly(2), Make(objects::has_status)),
    b("phase", Exactly(1), Make(objects::phase)),
    b("get", AtLeast(1), Pick(pick::get_path)),
    b("ownerKind", Exactly(1), Make(objects::owner_field)),
    b("ownerName", Exactly(1), Make(objects::owner_field)),
    b("hasCondition", Exactly(2), Make(objects::has_condition)),
    b("conditionReason", Exactly(2), Make(objects::condition_text)),
    b(
        "conditionMessage",
        Exactly(2),
        Make(objects::condition_text),
    ),
    b("resourceExists", Exactly(1), Make(objects::resource_exists)),
    b("isTerminating", Exactly(1), Make(objects::is_terminating)),
    b("generation", Exactly(1), Make(objects::generation)),
    b(
        "observedGeneration",
        Exactly(1),
        Make(objects::observed_generation),
    ),
    b("isSynced", Exactly(1), Make(objects::is_synced)),
    b("resourceCPU", Exactly(1), Make(objects::resource_request)),
    b(
        "resourceMemory",
        Exactly(1),
        Make(objects::resource_request),
    ),
    b("resourceName", Exactly(1), Make(objects::name_of)),
    b("resourceNamespace", Exactly(1), Make(objects::namespace_of)),
    b("resourceUID", Exactly(1), Make(objects::resource_uid)),
    b(
        "resourceVersion",
        Exactly(1),
        Make(objects::resource_version),
    ),
    b(
        "creationTimestamp",
        Exactly(1),
        Make(objects::creation_timestamp),
    ),
    // data
    b("toBase64", Exactly(1), Make(data::to_base64)),
    b("fromBase64", Exactly(1), Make(data::from_base64)),
    b("toJSON", Exactly(1), Make(types::to_json)),
    b("sha256sum", Exactly(1), Make(data::sha256sum)),
    b("truncateName", Exactly(2), Make(data::truncate_name)),
    b("slugify", Exactly(1), Make(data::slugify)),
    // environment
    b("inCluster", Exactly(0), Make(objects::in_cluster)),
];

/// Every built-in function name, for validation and suggestions.
pub const NAMES: &[&str] = &names::<{ BUILTINS.len() }>();

const fn names<const N: usize>() -> [&'static str; N] {
    let mut out = [""; N];
    let mut i = 0;
    while i < N {
        out[i] = BUILTINS[i].name;
        i += 1;
    }
    out
}

/// The built-in called `name`, if there is one.
fn find(name: &str) -> Option<&'static Builtin> {
    BUILTINS.iter().find(|b| b.name == name)
}

/// Whether `name` is evaluated by the evaluator itself (`and`, `or`).
pub fn is_lazy(name: &str) -> bool {
    find(name).is_some_and(|b| matches!(b.body, Lazy))
}

/// Orkestra note families ork does not provide, with the reason given to the user.
pub fn unsupported_reason(name: &str) -> Option<&'static str> {
    let families: [(&str, &str); 8] = [
        (
            "random",
            "random values change on every reconcile; let the service generate them",
        ),
        (
            "cron",
            "cron notes are not provided by ork; compute schedules in the service",
        ),
        (
            "semver",
            "semver notes are not provided by ork; compare versions in the service",
        ),
        (
            "time",
            "clock-dependent notes are not provided by ork (templates are deterministic)",
        ),
        ("duration", "duration notes are not provided by ork"),
        ("docker", "docker notes are not provided by ork"),
        ("git", "git notes are not provided by ork"),
        ("quantity", "quantity notes are not provided by ork"),
    ];
    let lower = name.to_ascii_lowercase();
    if matches!(
        name,
        "timeAgo" | "timeSince" | "timeUntil" | "isExpired" | "now"
    ) {
        return Some(families[3].1);
    }
    if matches!(name, "parseQuantity" | "formatQuantity" | "sumQuantity") {
        return Some(families[7].1);
    }
    families
        .iter()
        .find(|(prefix, _)| lower.starts_with(prefix))
        .map(|(_, why)| *why)
}

/// Calls built-in `name`; `Ok(None)` when no such built-in exists. What it makes is charged to
/// `m`; what it returns of its arguments is passed on, not copied.
pub fn call<'c>(
    name: &str,
    args: Vec<Val<'c>>,
    facts: &Facts,
    m: &Meter,
) -> Result<Option<Val<'c>>, TemplateError> {
    let Some(builtin) = find(name) else {
        return Ok(None);
    };
    match builtin.arity {
        Exactly(n) => arity(name, &args, n)?,
        AtLeast(n) => at_least(name, &args, n)?,
        Any => {}
    }
    match builtin.body {
        Lazy => Ok(None),
        Pick(f) => f(name, &args, m).map(Some),
        Make(f) => {
            let refs: Vec<&Value> = args.iter().map(|v| &**v).collect();
            let call = Call {
                name,
                args: &refs,
                facts,
                meter: m,
            };
            Ok(Some(Val::fresh(f(&call)?, m)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::data::{base64_decode, base64_encode, sha256};
    use super::*;
    use serde_json::json;

    fn try_f(name: &str, args: Vec<Value>) -> Result<Option<Value>, TemplateError> {
        let args: Vec<Val<'_>> = args.into_iter().map(|v| Val::Own(v.into())).collect();
        call(name, args, Facts::current(), &Meter::default()).map(|v| v.map(|v| (*v).clone()))
    }

    fn f(name: &str, args: Vec<Value>) -> Value {
        try_f(name, args)
            .expect("call succeeds")
            .expect("function exists")
    }

    #[test]
    fn encodings_match_known_vectors() {
        assert_eq!(base64_encode(b"hello"), "aGVsbG8=");
        assert_eq!(base64_decode("aGVsbG8=").as_deref(), Some(&b"hello"[..]));
        assert_eq!(base64_encode(b""), "");
        let hex: String = sha256(b"abc").iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(
            hex,
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(f("sha256sum", vec![json!("abc")]), json!("ba7816bf"));
    }

    #[test]
    fn orkestra_string_and_math_notes() {
        assert_eq!(
            f("camelToKebab", vec![json!("HTTPRequest")]),
            json!("http-request")
        );
        assert_eq!(
            f("camelToKebab", vec![json!("myAppName")]),
            json!("my-app-name")
        );
        assert_eq!(
            f("truncate", vec![json!("abcdefgh"), json!(6)]),
            json!("abc...")
        );
        assert_eq!(
            f("slugify", vec![json!("My App / Service")]),
            json!("my-app-service")
        );
        assert_eq!(f("add", vec![json!(8080), json!("1000")]), json!(9080));
        assert_eq!(f("div", vec![json!(3), json!(2)]), json!(1.5));
        assert_eq!(f("clamp", vec![json!(50), json!(1), json!(20)]), json!(20));
        assert_eq!(f("default", vec![json!("x"), json!(null)]), json!("x"));
        assert_eq!(f("default", vec![json!("x"), json!("y")]), json!("y"));
        assert_eq!(
            f("coalesce", vec![json!(""), json!(0), json!("z")]),
            json!("z")
        );
        assert_eq!(
            f("toList", vec![json!("a, b,a,,c")]),
            json!(["a", "b", "c"])
        );
        assert_eq!(
            f("split", vec![json!("a,b"), json!(",")]),
            json!(["a", "b"])
        );
        assert_eq!(
            f("index", vec![json!({"a": [1, 2]}), json!("a"), json!(1)]),
            json!(2)
        );
        assert_eq!(
            f("slice", vec![json!("abcdef"), json!(1), json!(3)]),
            json!("bc")
        );
        assert_eq!(f("len", vec![json!(null)]), json!(0));
        assert_eq!(f("urlquery", vec![json!("a b&c")]), json!("a+b%26c"));
        assert_eq!(
            f("html", vec![json!("<a href='x'>")]),
            json!("&lt;a href=&#39;x&#39;&gt;")
        );
        assert!(try_f("repeat", vec![json!("ab"), json!(1_000_000)]).is_err());
    }

    #[test]
    fn kubernetes_object_notes() {
        let obj = json!({
            "metadata": {"name": "web", "labels": {"app": "x"}, "generation": 2},
            "status": {"observedGeneration": 2, "phase": "Ready",
                       "conditions": [{"type": "Available", "status": "True", "reason": "Ok"}]}
        });
        assert_eq!(f("name", vec![obj.clone()]), json!("web"));
        assert_eq!(f("getLabel", vec![obj.clone(), json!("app")]), json!("x"));
        assert_eq!(
            f("hasCondition", vec![obj.clone(), json!("Available")]),
            json!(true)
        );
        assert_eq!(
            f("conditionReason", vec![obj.clone(), json!("Available")]),
            json!("Ok")
        );
        assert_eq!(f("isSynced", vec![obj.clone()]), json!(true));
        assert_eq!(f("phase", vec![obj.clone()]), json!("Ready"));
        assert_eq!(
            f("get", vec![obj, json!("metadata"), json!("name")]),
            json!("web")
        );
    }
}
