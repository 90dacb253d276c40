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

/// A built-in function: its name, how many arguments it takes, what it does, and how the
/// reference documents it ([`functions`]).
pub(super) struct Builtin {
    /// The section of the reference it is listed under.
    pub family: &'static str,
    pub name: &'static str,
    pub arity: Arity,
    pub body: Body,
    /// Its arguments as a user writes them after the name (`S PREFIX`, `MAP [KEYS...]`).
    pub args: &'static str,
    /// What it does, in a sentence or two.
    pub doc: &'static str,
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

/// A table row in `family`, documented by [`Builtin::doc`].
const fn b(family: &'static str, name: &'static str, arity: Arity, body: Body) -> Builtin {
    Builtin {
        family,
        name,
        arity,
        body,
        args: "",
        doc: "",
    }
}

impl Builtin {
    /// The row with its arguments (as written after the name) and what it does.
    const fn doc(self, args: &'static str, doc: &'static str) -> Builtin {
        Builtin { args, doc, ..self }
    }
}

/// The families, in table order.
const GO: &str = "Go text/template built-ins";
const ORK: &str = "ork's own";
const STR: &str = "strings";
const MATH: &str = "math";
const COND: &str = "conditionals";
const TYPES: &str = "types";
const COLL: &str = "collections";
const SAFE: &str = "safe access";
const K8S: &str = "Kubernetes objects";
const DATA: &str = "data";
const ENV: &str = "environment";

/// Every built-in, in the order validation and the reference list them. Pipelines pass the
/// piped value as the last argument.
pub(super) const BUILTINS: &[Builtin] = &[
    b(GO, "and", Any, Lazy).doc(
        "ARGS...",
        "The first argument that is false in Go's sense (false, 0, nil, empty text, list or \
         map), else the last; the arguments after it are not evaluated, as in Go.",
    ),
    b(GO, "or", Any, Lazy).doc(
        "ARGS...",
        "The first argument that is true in Go's sense (not false, 0, nil, empty text, list or \
         map), else the last; the arguments after it are not evaluated, as in Go.",
    ),
    b(GO, "not", Exactly(1), Make(go::not)).doc(
        "X",
        "true when X is false in Go's sense (false, 0, nil, empty text, list or map), else \
         false.",
    ),
    b(GO, "len", Exactly(1), Make(go::len)).doc(
        "X",
        "The length of a string (in bytes), list or map. Unlike Go, nil, a number or a boolean \
         gives 0 instead of an error.",
    ),
    b(GO, "index", AtLeast(1), Pick(pick::index_all)).doc(
        "X [KEYS...]",
        "X indexed by each key in turn: a map by key (read as text), a list by position, a \
         string by byte position (giving the byte as a number). A missing map key gives nil and \
         so does indexing nil (Go stops with an error there); a position out of range is an \
         error, as in Go.",
    ),
    b(GO, "slice", AtLeast(1), Make(go::slice)).doc(
        "X [START [END [CAP]]]",
        "The part of a string or list from START (default 0) up to END (default its length), \
         positions in bytes for a string, as Go's slice. A position out of range, START after \
         END, a cut through a character or three indexes on a string is an error; a list's CAP \
         is accepted and not checked.",
    ),
    b(GO, "print", Any, Make(go::print)).doc(
        "[ARGS...]",
        "The arguments printed as Go's fmt.Sprint does: a space between two operands when \
         neither is a string, nil as <nil>, a map as map[k:v], a list as [a b].",
    ),
    b(GO, "printf", AtLeast(1), Make(go::printf)).doc(
        "FORMAT [ARGS...]",
        "FORMAT filled with ARGS as Go's fmt.Sprintf, for the verbs %v %s %q %d %t %c %U %x %X \
         %o %b %f %F %e %E %g %G with flags, width and precision. Unlike Go, %+v and %#v print \
         the value as JSON.",
    ),
    b(GO, "println", Any, Make(go::println)).doc(
        "[ARGS...]",
        "As `print`, but with a space between every two operands and a newline at the end, as \
         Go's fmt.Sprintln.",
    ),
    b(GO, "eq", AtLeast(2), Make(go::eq)).doc(
        "A B...",
        "Whether A equals any of the arguments after it. Unlike Go it never fails: numbers \
         compare by value, scalars by their text (`eq 1 \"1\"` and `eq .missing \"\"` are \
         true), and a list or map equals only an identical one.",
    ),
    b(GO, "ne", Exactly(2), Make(go::ne)).doc(
        "A B",
        "The negation of `eq A B` (exactly two arguments, as in Go).",
    ),
    b(GO, "lt", Exactly(2), Make(go::ordered)).doc(
        "A B",
        "Whether A < B: numbers by value, strings byte by byte, a number and numeric text as \
         numbers, nil as 0 or \"\" (Go refuses mixed types). Booleans, lists, maps and text that \
         is not a number against a number are an error.",
    ),
    b(GO, "le", Exactly(2), Make(go::ordered))
        .doc("A B", "Whether A <= B, comparing as `lt` does."),
    b(GO, "gt", Exactly(2), Make(go::ordered)).doc("A B", "Whether A > B, comparing as `lt` does."),
    b(GO, "ge", Exactly(2), Make(go::ordered))
        .doc("A B", "Whether A >= B, comparing as `lt` does."),
    b(GO, "html", Any, Make(go::html)).doc(
        "[ARGS...]",
        "The arguments printed as `print` does, with & < > \" ' escaped as HTML entities (and \
         NUL as U+FFFD), as Go's html.",
    ),
    b(GO, "js", Any, Make(go::js)).doc(
        "[ARGS...]",
        "The arguments printed as `print` does, escaped for a JavaScript string: \\ ' \" with a \
         backslash, < > & = and control characters as \\uXXXX, as Go's js.",
    ),
    b(GO, "urlquery", Any, Make(go::urlquery)).doc(
        "[ARGS...]",
        "The arguments printed as `print` does, escaped for a URL query: letters, digits and \
         - _ . ~ kept, a space as +, every other byte as %XX, as Go's urlquery.",
    ),
    b(ORK, "lower", Exactly(1), Make(strings::lower)).doc(
        "S",
        "S (any value, read as text) in lower case. The same function as `toLower`.",
    ),
    b(ORK, "upper", Exactly(1), Make(strings::upper)).doc(
        "S",
        "S (any value, read as text) in upper case. The same function as `toUpper`.",
    ),
    b(ORK, "quote", Exactly(1), Make(strings::quote)).doc(
        "S",
        "S read as text, in double quotes with \" \\ and control characters escaped as Go's \
         strconv.Quote does. It takes exactly one argument (sprig's quote takes several).",
    ),
    b(STR, "toLower", Exactly(1), Make(strings::lower)).doc(
        "S",
        "S (any value, read as text) in lower case. The same function as `lower`.",
    ),
    b(STR, "toUpper", Exactly(1), Make(strings::upper)).doc(
        "S",
        "S (any value, read as text) in upper case. The same function as `upper`.",
    ),
    b(STR, "trimSpace", Exactly(1), Make(strings::trim_space))
        .doc("S", "S without leading and trailing whitespace."),
    b(STR, "trim", Any, Make(strings::trim)).doc(
        "S [CUTSET]",
        "With one argument, S without leading and trailing whitespace (ork's own trim); with \
         two, S without any of the characters of CUTSET at either end, as Go's \
         strings.Trim(S, CUTSET), the subject first.",
    ),
    b(STR, "trimPrefix", Exactly(2), Make(strings::trim_prefix)).doc(
        "S PREFIX",
        "S without PREFIX at its start, S unchanged when it does not start with it. The subject \
         comes first, as in Go's strings.TrimPrefix (sprig's trimPrefix takes PREFIX first), so \
         `.s | trimPrefix \"v\"` trims .s off \"v\": write `trimPrefix .s \"v\"`.",
    ),
    b(STR, "trimSuffix", Exactly(2), Make(strings::trim_suffix)).doc(
        "S SUFFIX",
        "S without SUFFIX at its end, S unchanged when it does not end with it. The subject \
         comes first, as in Go's strings.TrimSuffix (sprig's trimSuffix takes SUFFIX first).",
    ),
    b(STR, "hasPrefix", Exactly(2), Make(strings::has_prefix)).doc(
        "S PREFIX",
        "Whether S starts with PREFIX. The subject comes first, as in Go's strings.HasPrefix \
         (sprig's hasPrefix takes PREFIX first).",
    ),
    b(STR, "hasSuffix", Exactly(2), Make(strings::has_suffix)).doc(
        "S SUFFIX",
        "Whether S ends with SUFFIX. The subject comes first, as in Go's strings.HasSuffix \
         (sprig's hasSuffix takes SUFFIX first).",
    ),
    b(STR, "contains", Exactly(2), Make(strings::contains)).doc(
        "S SUBSTR",
        "Whether S contains SUBSTR. The subject comes first, as in Go's strings.Contains \
         (sprig's contains takes SUBSTR first).",
    ),
    b(STR, "replace", Exactly(3), Make(strings::replace)).doc(
        "S OLD NEW",
        "S with every OLD replaced by NEW, as Go's strings.ReplaceAll(S, OLD, NEW), the subject \
         first (sprig's replace takes it last). A result that could pass 1 MiB is an error.",
    ),
    b(STR, "split", Exactly(2), Make(strings::split)).doc(
        "S SEP",
        "The list of the parts of S between each SEP, as Go's strings.Split(S, SEP) (sprig's \
         split gives a map): an empty SEP splits S into characters, but an empty S gives an \
         empty list where Go gives [\"\"].",
    ),
    b(STR, "join", Exactly(2), Make(strings::join)).doc(
        "LIST SEP",
        "The items of LIST read as text and joined with SEP; nil gives \"\" and a value that is \
         not a list is one item. LIST comes first, as in Go's strings.Join (sprig's join takes \
         SEP first).",
    ),
    b(STR, "repeat", Exactly(2), Make(strings::repeat)).doc(
        "S COUNT",
        "S repeated COUNT times, as Go's strings.Repeat (sprig's repeat takes COUNT first). A \
         negative COUNT or a result over 1 MiB is an error.",
    ),
    b(STR, "camelToKebab", Exactly(1), Make(strings::kebab)).doc(
        "S",
        "S from camelCase or PascalCase to kebab-case: myAppName gives my-app-name, HTTPRequest \
         gives http-request. Text with a non-ASCII character is only lowercased.",
    ),
    b(STR, "truncate", Exactly(2), Make(strings::truncate)).doc(
        "S N",
        "S when it is at most N bytes long, else its first N-3 bytes followed by ... (only the \
         first N bytes when N is 3 or less). A cut never splits a character; a negative N \
         counts as 0.",
    ),
    b(MATH, "add", Exactly(2), Make(math::arithmetic)).doc(
        "A B",
        "A + B. As in every math function, the arguments are numbers, numeric text or booleans \
         (1 and 0), nil or anything else is an error, and a whole result is an integer, any \
         other a float.",
    ),
    b(MATH, "sub", Exactly(2), Make(math::arithmetic))
        .doc("A B", "A - B, reading its arguments as `add` does."),
    b(MATH, "mul", Exactly(2), Make(math::arithmetic))
        .doc("A B", "A * B, reading its arguments as `add` does."),
    b(MATH, "div", Exactly(2), Make(math::arithmetic)).doc(
        "A B",
        "A / B as a float division (`div 3 2` is 1.5, where sprig's div gives 1), a whole \
         result as an integer. Dividing by zero is an error.",
    ),
    b(MATH, "mod", Exactly(2), Make(math::arithmetic)).doc(
        "A B",
        "The remainder of A / B once both are truncated to integers, with the sign of A. A B \
         that truncates to 0 is an error.",
    ),
    b(MATH, "min", Exactly(2), Make(math::arithmetic)).doc(
        "A B",
        "The smaller of A and B, read as `add` does. It takes exactly two arguments (sprig's \
         min takes any number).",
    ),
    b(MATH, "max", Exactly(2), Make(math::arithmetic)).doc(
        "A B",
        "The larger of A and B, read as `add` does. It takes exactly two arguments (sprig's max \
         takes any number).",
    ),
    b(MATH, "clamp", Exactly(3), Make(math::clamp)).doc(
        "V MIN MAX",
        "V held between MIN and MAX: MIN when V is below it, else MAX when V is above it, else \
         V (numbers read as `add` does).",
    ),
    b(MATH, "abs", Exactly(1), Make(math::abs))
        .doc("N", "The absolute value of N, read as `add` does."),
    b(COND, "ternary", Exactly(3), Pick(pick::ternary)).doc(
        "COND THEN ELSE",
        "THEN when COND is true in Go's sense (not false, 0, nil, empty text, list or map), \
         else ELSE. The condition comes first (sprig's ternary takes it last), so it cannot be \
         piped in.",
    ),
    b(COND, "boolTernary", Exactly(3), Pick(pick::bool_ternary)).doc(
        "COND THEN ELSE",
        "THEN when COND is true, else ELSE. COND must be a boolean, the text \"true\" or \
         \"false\", or nil (false); anything else is an error.",
    ),
    b(
        COND,
        "boolDefault",
        Exactly(2),
        Make(collections::get_bool_or),
    )
    .doc(
        "V DEFAULT",
        "V when it is a boolean (the text \"true\" is not one), else DEFAULT, which must be a \
         boolean, \"true\", \"false\" or nil (false). The same function as `getBoolOr`; V comes \
         first, so it cannot be piped in as with `default`.",
    ),
    b(COND, "eqTernary", Exactly(4), Pick(pick::eq_ternary)).doc(
        "A B THEN ELSE",
        "THEN when A and B read as the same text, else ELSE.",
    ),
    b(COND, "coalesce", Any, Pick(pick::coalesce)).doc(
        "[VALUES...]",
        "The first argument that is not empty (nil, \"\", 0, false, an empty list or map), nil \
         when all are empty or none is given.",
    ),
    b(COND, "default", Any, Pick(pick::default_value)).doc(
        "DEFAULT V",
        "V, or DEFAULT when V is empty (nil, \"\", 0, false, an empty list or map). The fallback \
         comes first, as in sprig, so `.v | default \"x\"` works; it takes exactly two \
         arguments.",
    ),
    b(COND, "empty", Exactly(1), Make(types::empty_test)).doc(
        "V",
        "Whether V is empty: nil, \"\", 0, false, an empty list or map, or the text <no value>.",
    ),
    b(COND, "notEmpty", Exactly(1), Make(types::not_empty)).doc("V", "The negation of `empty V`."),
    b(TYPES, "toInt", Exactly(1), Make(types::to_int)).doc(
        "V",
        "V as an integer: a number truncated toward zero, numeric text (spaces around allowed) \
         likewise, true and false as 1 and 0. nil, a list, a map or other text is an error \
         (sprig's toInt gives 0).",
    ),
    b(TYPES, "toFloat", Exactly(1), Make(types::to_float)).doc(
        "V",
        "V as a float: a number, numeric text (spaces around allowed), true and false as 1 and \
         0. nil, a list, a map or other text is an error.",
    ),
    b(TYPES, "toBool", Exactly(1), Make(types::to_bool)).doc(
        "V",
        "V as a boolean: a boolean as is, a number true when not 0, the text true, True, TRUE, \
         1, yes, Yes, YES, on, ON or false, False, FALSE, 0, no, No, NO, off, OFF, \"\". Other \
         text, nil, a list or a map is an error.",
    ),
    b(TYPES, "toString", Exactly(1), Pick(pick::to_string_value)).doc(
        "V",
        "V as text, printed as Go's %v does (a map as map[k:v], nil as \"\"); a string is passed \
         on as it is. `toJson` and `asString` give JSON instead.",
    ),
    b(TYPES, "toJson", Exactly(1), Make(types::to_json)).doc(
        "V",
        "V as compact JSON text (nil gives null). The same function as `toJSON`.",
    ),
    b(TYPES, "toList", Exactly(1), Make(types::to_list)).doc(
        "S",
        "The comma-separated items of the text S, each trimmed, empty ones and repeats dropped: \
         \"a, b,a,,c\" gives [a b c]. S is read as text, so a list is not passed through.",
    ),
    b(TYPES, "typeOf", Exactly(1), Make(types::type_of_value)).doc(
        "V",
        "The type of V: string, number, bool, map, slice or null (for nil, a missing value \
         included).",
    ),
    b(TYPES, "typeMap", Exactly(1), Make(types::type_is))
        .doc("V", "Whether V is a map (`typeOf V` is map)."),
    b(TYPES, "typeList", Exactly(1), Make(types::type_is))
        .doc("V", "Whether V is a list (`typeOf V` is slice)."),
    b(TYPES, "typeString", Exactly(1), Make(types::type_is)).doc("V", "Whether V is a string."),
    b(TYPES, "typeNumber", Exactly(1), Make(types::type_is))
        .doc("V", "Whether V is a number (numeric text is not)."),
    b(TYPES, "typeBool", Exactly(1), Make(types::type_is))
        .doc("V", "Whether V is a boolean (the text \"true\" is not)."),
    b(TYPES, "typeNull", Exactly(1), Make(types::type_is))
        .doc("V", "Whether V is nil, a missing value included."),
    b(TYPES, "isEmpty", Exactly(1), Make(types::is_empty)).doc(
        "V",
        "Whether V is nil, \"\", an empty list or an empty map. Unlike `empty`, 0 and false are \
         not empty.",
    ),
    b(TYPES, "isScalar", Exactly(1), Make(types::is_scalar)).doc(
        "V",
        "Whether V is a string, a number or a boolean (nil is not).",
    ),
    b(TYPES, "isComposite", Exactly(1), Make(types::is_composite))
        .doc("V", "Whether V is a list or a map."),
    b(COLL, "listHas", Exactly(2), Make(collections::list_has)).doc(
        "LIST V",
        "Whether LIST has an item equal to V as JSON (1 and \"1\" differ, unlike with `eq`); \
         false when LIST is not a list.",
    ),
    b(COLL, "listGet", Exactly(2), Pick(pick::list_get)).doc(
        "LIST I",
        "The item of LIST at position I (from 0); nil when I is out of range or negative or \
         LIST is not a list. I must read as an integer (nil is 0).",
    ),
    b(COLL, "listLen", Exactly(1), Make(collections::list_len)).doc(
        "LIST",
        "The number of items of LIST, 0 for anything that is not a list (unlike `len`, a string \
         or a map counts 0 too).",
    ),
    b(COLL, "mapGet", Exactly(2), Pick(pick::map_get)).doc(
        "MAP KEY",
        "The value of MAP at KEY (read as text); nil when the key is absent or MAP is not a \
         map.",
    ),
    b(COLL, "mapKeys", Exactly(1), Make(collections::map_keys)).doc(
        "MAP",
        "The keys of MAP as a sorted list of strings; an empty list when MAP is not a map.",
    ),
    b(COLL, "mapValues", Exactly(1), Make(collections::map_values)).doc(
        "MAP",
        "The values of MAP as a list, in the order of their sorted keys; an empty list when MAP \
         is not a map.",
    ),
    b(
        COLL,
        "mapPick",
        AtLeast(1),
        Make(collections::map_pick_or_omit),
    )
    .doc(
        "MAP [KEYS...]",
        "A map of the entries of MAP whose key is one of KEYS (read as text); an empty map when \
         MAP is not a map.",
    ),
    b(
        COLL,
        "mapOmit",
        AtLeast(1),
        Make(collections::map_pick_or_omit),
    )
    .doc(
        "MAP [KEYS...]",
        "MAP without the entries whose key is one of KEYS (read as text); an empty map when MAP \
         is not a map.",
    ),
    b(COLL, "asList", Exactly(1), Pick(pick::as_list)).doc(
        "V",
        "V when it is a list, the list written in V when it is JSON or YAML text holding one, \
         else an empty list.",
    ),
    b(COLL, "asMap", Exactly(1), Pick(pick::as_map)).doc(
        "V",
        "V when it is a map, the map written in V when it is JSON or YAML text holding one, \
         else an empty map.",
    ),
    b(COLL, "asString", Exactly(1), Pick(pick::as_string)).doc(
        "V",
        "V when it is a string, else V as compact JSON text (nil gives null, a map \
         {\"a\":1}), where `toString` prints Go's %v.",
    ),
    b(SAFE, "getOr", Exactly(2), Pick(pick::get_or)).doc(
        "V DEFAULT",
        "V, or DEFAULT when V is empty (nil, \"\", 0, false, an empty list or map). `default` \
         with the arguments the other way round: V comes first, so it cannot be piped in.",
    ),
    b(SAFE, "getStringOr", Exactly(2), Pick(pick::get_string_or)).doc(
        "V DEFAULT",
        "V when it is a string other than \"\", else DEFAULT read as text (a number V gives \
         DEFAULT too).",
    ),
    b(SAFE, "getIntOr", Exactly(2), Make(collections::get_int_or)).doc(
        "V DEFAULT",
        "V when it is a number (a float truncated), else DEFAULT read as an integer (nil is 0, \
         other text an error); numeric text in V gives DEFAULT.",
    ),
    b(
        SAFE,
        "getBoolOr",
        Exactly(2),
        Make(collections::get_bool_or),
    )
    .doc(
        "V DEFAULT",
        "V when it is a boolean (the text \"true\" is not one), else DEFAULT, which must be a \
         boolean, \"true\", \"false\" or nil (false). The same function as `boolDefault`.",
    ),
    b(K8S, "meta", Exactly(1), Pick(pick::meta)).doc(
        "OBJ",
        "The metadata map of OBJ; an empty map when it is absent or not a map.",
    ),
    b(K8S, "name", Exactly(1), Make(objects::name_of)).doc(
        "OBJ",
        "metadata.name of OBJ, \"\" when absent or not a string. The same function as \
         `resourceName`.",
    ),
    b(K8S, "namespace", Exactly(1), Make(objects::namespace_of)).doc(
        "OBJ",
        "metadata.namespace of OBJ, \"\" when absent or not a string. The same function as \
         `resourceNamespace`.",
    ),
    b(K8S, "labels", Exactly(1), Pick(pick::meta_map)).doc(
        "OBJ",
        "The metadata.labels map of OBJ; an empty map when it is absent or not a map.",
    ),
    b(K8S, "annotations", Exactly(1), Pick(pick::meta_map)).doc(
        "OBJ",
        "The metadata.annotations map of OBJ; an empty map when it is absent or not a map.",
    ),
    b(K8S, "getLabel", Exactly(2), Make(objects::meta_map_value)).doc(
        "OBJ KEY",
        "The value of the label KEY of OBJ, \"\" when absent or not a string.",
    ),
    b(K8S, "getLabelInt", Exactly(2), Make(objects::meta_map_int)).doc(
        "OBJ KEY",
        "The value of the label KEY of OBJ read as an integer, 0 when absent or not an \
         integer.",
    ),
    b(K8S, "hasLabel", Exactly(2), Make(objects::meta_map_has)).doc(
        "OBJ KEY",
        "Whether OBJ has the label KEY with a value other than \"\" (a label set to \"\" counts \
         as absent).",
    ),
    b(
        K8S,
        "getAnnotation",
        Exactly(2),
        Make(objects::meta_map_value),
    )
    .doc(
        "OBJ KEY",
        "The value of the annotation KEY of OBJ, \"\" when absent or not a string.",
    ),
    b(
        K8S,
        "getAnnotationInt",
        Exactly(2),
        Make(objects::meta_map_int),
    )
    .doc(
        "OBJ KEY",
        "The value of the annotation KEY of OBJ read as an integer, 0 when absent or not an \
         integer.",
    ),
    b(
        K8S,
        "hasAnnotation",
        Exactly(2),
        Make(objects::meta_map_has),
    )
    .doc(
        "OBJ KEY",
        "Whether OBJ has the annotation KEY with a value other than \"\" (one set to \"\" \
         counts as absent).",
    ),
    b(
        K8S,
        "labelMatches",
        AtLeast(1),
        Make(objects::label_matches),
    )
    .doc(
        "OBJ [KEY VALUE...]",
        "Whether every label KEY of OBJ is set to its VALUE (compared as text): true for no \
         pairs, false for an odd number of arguments after OBJ.",
    ),
    b(K8S, "spec", Exactly(1), Pick(pick::section_of)).doc(
        "OBJ",
        "The spec map of OBJ; an empty map when it is absent or not a map.",
    ),
    b(K8S, "status", Exactly(1), Pick(pick::section_of)).doc(
        "OBJ",
        "The status map of OBJ; an empty map when it is absent or not a map.",
    ),
    b(K8S, "getStatus", Exactly(2), Make(objects::get_status)).doc(
        "OBJ FIELD",
        "status.FIELD of OBJ (one key, not a path) read as text; \"\" when absent, nil, a list \
         or a map.",
    ),
    b(K8S, "hasStatus", Exactly(2), Make(objects::has_status)).doc(
        "OBJ FIELD",
        "Whether status.FIELD of OBJ (one key, not a path) is set to something other than nil, \
         \"\" or an empty list or map; false and 0 count as set.",
    ),
    b(K8S, "phase", Exactly(1), Make(objects::phase)).doc(
        "OBJ",
        "status.phase of OBJ, \"\" when absent or not a string.",
    ),
    b(K8S, "get", AtLeast(1), Pick(pick::get_path)).doc(
        "OBJ [KEYS...]",
        "OBJ followed through map keys one by one (`get $ \"spec\" \"m\"` is .spec.m), nil as \
         soon as one is missing. Each key is one map key, not a dotted path, and lists are not \
         indexed: use `index` for them.",
    ),
    b(K8S, "ownerKind", Exactly(1), Make(objects::owner_field)).doc(
        "OBJ",
        "The kind of the first of OBJ's metadata.ownerReferences, \"\" when it has none.",
    ),
    b(K8S, "ownerName", Exactly(1), Make(objects::owner_field)).doc(
        "OBJ",
        "The name of the first of OBJ's metadata.ownerReferences, \"\" when it has none.",
    ),
    b(
        K8S,
        "hasCondition",
        Exactly(2),
        Make(objects::has_condition),
    )
    .doc(
        "OBJ TYPE",
        "Whether OBJ's status.conditions has a condition of type TYPE whose status is \"True\".",
    ),
    b(
        K8S,
        "conditionReason",
        Exactly(2),
        Make(objects::condition_text),
    )
    .doc(
        "OBJ TYPE",
        "The reason of OBJ's condition of type TYPE, \"\" when there is no such condition or \
         it has no reason.",
    ),
    b(
        K8S,
        "conditionMessage",
        Exactly(2),
        Make(objects::condition_text),
    )
    .doc(
        "OBJ TYPE",
        "The message of OBJ's condition of type TYPE, \"\" when there is no such condition or \
         it has no message.",
    ),
    b(
        K8S,
        "resourceExists",
        Exactly(1),
        Make(objects::resource_exists),
    )
    .doc(
        "OBJ",
        "Whether OBJ is an object (a map) and not a placeholder (one with _placeholder: true); \
         false for nil.",
    ),
    b(
        K8S,
        "isTerminating",
        Exactly(1),
        Make(objects::is_terminating),
    )
    .doc(
        "OBJ",
        "Whether OBJ is being deleted: its metadata.deletionTimestamp is set.",
    ),
    b(K8S, "generation", Exactly(1), Make(objects::generation)).doc(
        "OBJ",
        "metadata.generation of OBJ, 0 when absent or not an integer.",
    ),
    b(
        K8S,
        "observedGeneration",
        Exactly(1),
        Make(objects::observed_generation),
    )
    .doc(
        "OBJ",
        "status.observedGeneration of OBJ, 0 when absent or not an integer.",
    ),
    b(K8S, "isSynced", Exactly(1), Make(objects::is_synced)).doc(
        "OBJ",
        "Whether OBJ's metadata.generation is set and equals its status.observedGeneration.",
    ),
    b(
        K8S,
        "resourceCPU",
        Exactly(1),
        Make(objects::resource_request),
    )
    .doc(
        "OBJ",
        "spec.resources.requests.cpu of OBJ as written (\"500m\"), \"\" when absent or not a \
         string. It reads OBJ's own spec.resources, not a pod's containers.",
    ),
    b(
        K8S,
        "resourceMemory",
        Exactly(1),
        Make(objects::resource_request),
    )
    .doc(
        "OBJ",
        "spec.resources.requests.memory of OBJ as written (\"256Mi\"), \"\" when absent or not \
         a string. It reads OBJ's own spec.resources, not a pod's containers.",
    ),
    b(K8S, "resourceName", Exactly(1), Make(objects::name_of)).doc(
        "OBJ",
        "metadata.name of OBJ, \"\" when absent. The same function as `name`.",
    ),
    b(
        K8S,
        "resourceNamespace",
        Exactly(1),
        Make(objects::namespace_of),
    )
    .doc(
        "OBJ",
        "metadata.namespace of OBJ, \"\" when absent. The same function as `namespace`.",
    ),
    b(K8S, "resourceUID", Exactly(1), Make(objects::resource_uid)).doc(
        "OBJ",
        "metadata.uid of OBJ, \"\" when absent or not a string.",
    ),
    b(
        K8S,
        "resourceVersion",
        Exactly(1),
        Make(objects::resource_version),
    )
    .doc(
        "OBJ",
        "metadata.resourceVersion of OBJ, \"\" when absent or not a string.",
    ),
    b(
        K8S,
        "creationTimestamp",
        Exactly(1),
        Make(objects::creation_timestamp),
    )
    .doc(
        "OBJ",
        "metadata.creationTimestamp of OBJ as the text the API server wrote (RFC 3339), \"\" \
         when absent.",
    ),
    b(DATA, "toBase64", Exactly(1), Make(data::to_base64)).doc(
        "S",
        "S read as text, encoded as standard base64 with padding.",
    ),
    b(DATA, "fromBase64", Exactly(1), Make(data::from_base64)).doc(
        "S",
        "The text S encodes in standard padded base64 (spaces around ignored); \"\" when S is \
         not such base64 or does not decode to UTF-8 text.",
    ),
    b(DATA, "toJSON", Exactly(1), Make(types::to_json)).doc(
        "V",
        "V as compact JSON text (nil gives null). The same function as `toJson`.",
    ),
    b(DATA, "sha256sum", Exactly(1), Make(data::sha256sum)).doc(
        "S",
        "The first 8 hex digits (4 bytes) of the SHA-256 of S read as text, a short stable \
         suffix; sprig's sha256sum gives all 64.",
    ),
    b(DATA, "truncateName", Exactly(2), Make(data::truncate_name)).doc(
        "S N",
        "The first N bytes of S, fewer when a cut would split a character; unlike `truncate`, \
         no ... is added. A negative N gives \"\".",
    ),
    b(DATA, "slugify", Exactly(1), Make(data::slugify)).doc(
        "S",
        "S in lower case with every run of characters other than a-z and 0-9 turned into one - \
         and none at either end: \"My App / Service\" gives my-app-service.",
    ),
    b(ENV, "inCluster", Exactly(0), Make(objects::in_cluster)).doc(
        "",
        "true when ork runs in a pod (a service account token is mounted under \
         /var/run/secrets/kubernetes.io/serviceaccount), else false: the same as \
         .ork.inCluster.",
    ),
];

/// A built-in function as the reference lists it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FunctionDoc {
    /// What a template calls it.
    pub name: &'static str,
    /// Its arguments as written after the name, space-separated: `S PREFIX`, `MAP [KEYS...]`,
    /// `[ARGS...]`; empty when it takes none.
    pub args: &'static str,
    /// What it does, in a sentence or two.
    pub doc: &'static str,
    /// The section it is listed under: `Go text/template built-ins`, `strings`,
    /// `Kubernetes objects`…
    pub family: &'static str,
}

/// Every built-in function, documented, in table order (grouped by family).
pub fn functions() -> impl Iterator<Item = FunctionDoc> {
    BUILTINS.iter().map(|b| FunctionDoc {
        name: b.name,
        args: b.args,
        doc: b.doc,
        family: b.family,
    })
}

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

/// Orkestra note families ork does not provide: the prefix of their names (matched ignoring
/// case) and the reason given to the user.
const UNSUPPORTED: &[(&str, &str)] = &[
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

/// The Orkestra note families ork refuses, with the reason: a name starting with the family
/// (ignoring case) is refused, and so are `timeAgo`, `timeSince`, `timeUntil`, `isExpired`,
/// `now` (time) and `parseQuantity`, `formatQuantity`, `sumQuantity` (quantity).
pub fn unsupported_families() -> &'static [(&'static str, &'static str)] {
    UNSUPPORTED
}

/// Why `name` is refused, when it belongs to one of the [`unsupported_families`].
pub fn unsupported_reason(name: &str) -> Option<&'static str> {
    let family = match name {
        "timeAgo" | "timeSince" | "timeUntil" | "isExpired" | "now" | "weekday" | "weekend"
        | "timeInWindow" | "inWindow" | "dayOfWeek" => Some("time"),
        "nextCron" | "prevCron" | "lastCron" => Some("cron"),
        "parseQuantity" | "formatQuantity" | "sumQuantity" => Some("quantity"),
        _ => None,
    };
    let lower = name.to_ascii_lowercase();
    UNSUPPORTED
        .iter()
        .find(|(prefix, _)| family.map_or_else(|| lower.starts_with(prefix), |f| f == *prefix))
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
    fn every_builtin_is_documented_in_a_family() {
        for f in functions() {
            assert!(!f.doc.trim().is_empty(), "{} has no doc", f.name);
            assert!(!f.family.is_empty(), "{} has no family", f.name);
        }
        assert_eq!(functions().count(), BUILTINS.len());
        let names: Vec<&str> = functions().map(|f| f.name).collect();
        assert_eq!(names, NAMES, "functions() is in table order");
    }

    #[test]
    fn documented_arguments_agree_with_the_arity() {
        for b in BUILTINS {
            let (name, args) = (b.name, b.args);
            assert!(
                args.chars()
                    .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || " []._".contains(c)),
                "{name}: arguments are UPPERCASE names: {args:?}"
            );
            let words: Vec<&str> = args.split_whitespace().collect();
            let variadic = words
                .last()
                .is_some_and(|w| w.trim_end_matches(']').ends_with("..."));
            match b.arity {
                Exactly(n) => {
                    assert_eq!(words.len(), n, "{name} takes {n} arguments: {args:?}");
                    assert!(
                        !args.contains("...") && !args.contains('['),
                        "{name} takes exactly {n}, none optional: {args:?}"
                    );
                }
                AtLeast(n) => {
                    assert!(
                        words.len() >= n || variadic,
                        "{name} takes at least {n} arguments: {args:?}"
                    );
                    assert!(
                        variadic || args.contains('['),
                        "{name} takes more than {n}: {args:?}"
                    );
                }
                Any => {}
            }
        }
    }

    #[test]
    fn no_two_builtins_share_a_name() {
        let mut seen = std::collections::HashSet::new();
        for b in BUILTINS {
            assert!(seen.insert(b.name), "{} is in the table twice", b.name);
        }
    }

    #[test]
    fn unsupported_families_give_the_reasons_validation_uses() {
        for (family, why) in unsupported_families() {
            assert_eq!(unsupported_reason(family), Some(*why));
        }
        let reason = |family: &str| {
            unsupported_families()
                .iter()
                .find(|(f, _)| *f == family)
                .map(|(_, why)| *why)
        };
        assert_eq!(unsupported_reason("now"), reason("time"));
        assert_eq!(unsupported_reason("isExpired"), reason("time"));
        assert_eq!(unsupported_reason("parseQuantity"), reason("quantity"));
        assert_eq!(unsupported_reason("randomString"), reason("random"));
        assert_eq!(unsupported_reason("semverCompare"), reason("semver"));
        for name in NAMES {
            assert_eq!(unsupported_reason(name), None, "{name} is provided");
        }
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
