//! Go templates (SPEC §1, §9): `ork_katalog::Template::parse` on generated sources — actions,
//! pipelines, every built-in function with odd arguments, `if`/`with`/`range` blocks, variables,
//! notes, nesting around and far past the depth limit — then `render` (with notes and
//! sentinels) over generated CRs.
//!
//! Properties: no panic and no stack overflow (cases run on a thread with tokio's 2 MiB
//! stack), bounded time and memory, output within the 1 MiB budget, a source without actions
//! renders to itself, and the same render twice gives the same text.

use std::collections::BTreeMap;

use ork_katalog::template::BUILTIN_FUNCTIONS;
use ork_katalog::{Notes, RenderContext, Sentinel, Template};

use crate::generate::Gen;
use crate::runner::{Case, Target};
use crate::targets::cr::{SPEC_FIELDS, cr};

#[derive(Debug)]
pub struct Templates;

/// The render output budget of `ork_katalog` (bytes).
const MAX_OUTPUT: usize = 1 << 20;

impl Target for Templates {
    fn name(&self) -> &'static str {
        "template"
    }

    fn about(&self) -> &'static str {
        "Template::parse and render (notes, sentinels) over generated CRs"
    }

    fn run(&self, g: &mut Gen, case: &mut Case) {
        let source = source(g);
        let cr_node = cr(g);
        let data = cr_node.to_value();
        let note_defs: Vec<(String, String)> = (0..g.below(3))
            .map(|_| (note_name(g), source_in(g, 3)))
            .collect();
        case.note("template", &format!("{source:?}"));
        for (name, expr) in &note_defs {
            case.note("note", &format!("{name:?} = {expr:?}"));
        }
        case.note("cr", &cr_node.to_json());

        case.begin();
        let Ok(template) = Template::parse(&source) else {
            return;
        };
        let _ = template.functions();
        let notes = Notes::compile(note_defs.iter().map(|(n, e)| (n.as_str(), e.as_str())))
            .unwrap_or_default();
        let mut sentinels: BTreeMap<Sentinel, bool> = BTreeMap::new();
        for s in Sentinel::ALL {
            if g.coin() {
                sentinels.insert(s, g.coin());
            }
        }
        let ctx = RenderContext::new(&data)
            .with_notes(&notes)
            .with_sentinels(&sentinels);
        let first = template.render_in(&ctx);
        if let Ok(out) = &first {
            case.check(out.len() <= MAX_OUTPUT, "render-output-bounded", || {
                format!("rendered {} bytes, budget {MAX_OUTPUT}", out.len())
            });
            if template.is_literal() {
                case.check(out == &source, "render-literal-is-itself", || {
                    format!("a template without actions rendered as {out:?}")
                });
            }
        }
        if g.one_in(8) {
            let second = template.render_in(&ctx);
            case.check(second == first, "render-deterministic", || {
                format!("two renders differ: {first:?} then {second:?}")
            });
        }
    }
}

fn note_name(g: &mut Gen) -> String {
    match g.below(6) {
        0 => (*g.pick(BUILTIN_FUNCTIONS)).to_string(),
        1 => g.pick(&["serviceUrl", "tier", "loop", "a"]).to_string(),
        2 => g.hostile_str(),
        _ => format!("note{}", g.below(4)),
    }
}

/// A template source for Katalog fields: mostly well formed, sometimes broken.
pub fn source(g: &mut Gen) -> String {
    match g.below(30) {
        0 => deep_parens(g),
        1 => deep_blocks(g),
        2 => g.hostile_str(),
        3 => {
            let s = source_in(g, 6);
            g.mutate_str(&s)
        }
        4 if g.full() => stress(g),
        _ => source_in(g, 6),
    }
}

/// A template with up to `budget` nodes.
pub fn source_in(g: &mut Gen, budget: usize) -> String {
    let mut t = TGen {
        g,
        depth: 0,
        vars: Vec::new(),
        in_range: false,
    };
    let n = 1 + t.g.below(budget);
    t.nodes(n)
}

/// Parentheses around and far past the parser's depth limit (64).
fn deep_parens(g: &mut Gen) -> String {
    let depth = match g.below(4) {
        0 => 60 + g.below(10),
        1 => g.below(200),
        2 => 10_000,
        _ => 1 + g.below(64),
    };
    let inner = g
        .pick(&["1", ".spec.n", "add 1 2", "$", "\"x\""])
        .to_string();
    let close = if g.one_in(10) {
        depth.saturating_sub(1)
    } else {
        depth
    };
    format!(
        "{{{{ {}{inner}{} }}}}",
        "(".repeat(depth),
        ")".repeat(close)
    )
}

/// `if`/`with`/`range` blocks around and past the depth limit.
fn deep_blocks(g: &mut Gen) -> String {
    let depth = match g.below(3) {
        0 => 60 + g.below(10),
        1 => 5_000,
        _ => g.below(100),
    };
    let kw = *g.pick(&["if 1", "with .spec", "range .spec.list", "if .spec.mode"]);
    let ends = if g.one_in(10) { depth / 2 } else { depth };
    format!(
        "{}x{}",
        format!("{{{{ {kw} }}}}").repeat(depth),
        "{{ end }}".repeat(ends)
    )
}

/// Idioms whose cost could grow with the CR: whole-object references and conversions inside
/// loops, over huge counts too. The step budget must bound their time.
fn stress(g: &mut Gen) -> String {
    let over = if g.one_in(3) {
        g.pick(&["100000000", "1000000", ".spec.n"]).to_string()
    } else {
        g.pick(&[
            ".spec.list",
            ".spec.items",
            ".metadata.labels",
            "100000",
            "$.spec",
        ])
        .to_string()
    };
    let body = *g.pick(&[
        "{{ if $ }}{{ end }}",
        "{{ $x := toJson $ }}",
        "{{ $x := $.spec }}",
        "{{ $y := len $.spec.list }}",
        "{{ range $.spec.list }}{{ end }}",
        "{{ if eq (toJson .) \"x\" }}{{ end }}",
        "{{ $z := mapKeys $.metadata.labels }}",
        "{{ $s := printf \"%v\" $ }}",
        "{{ $h := sha256sum (toJson $) }}",
    ]);
    let nested = if g.coin() {
        format!("{{{{ range {over} }}}}{body}{{{{ end }}}}")
    } else {
        body.to_string()
    };
    format!("{{{{ range {over} }}}}{nested}{{{{ end }}}}")
}

struct TGen<'a> {
    g: &'a mut Gen,
    depth: usize,
    vars: Vec<String>,
    in_range: bool,
}

impl TGen<'_> {
    fn nodes(&mut self, n: usize) -> String {
        (0..n).map(|_| self.node()).collect()
    }

    fn node(&mut self) -> String {
        if self.depth > 8 {
            return self.action();
        }
        match self.g.below(14) {
            0..=2 => self.text(),
            3..=6 => self.action(),
            7 => self.block("if"),
            8 => self.block("with"),
            9 => self.range(),
            10 => {
                let var = format!("${}", self.g.pick(&["x", "y", "v", "i", "_", "x1"]));
                let op = if self.vars.contains(&var) && self.g.coin() {
                    "="
                } else {
                    ":="
                };
                self.vars.push(var.clone());
                let p = self.pipeline();
                format!("{{{{ {var} {op} {p} }}}}")
            }
            11 => format!("{{{{/* {} */}}}}", self.g.ident()),
            12 => {
                if self.in_range || self.g.one_in(4) {
                    self.g.pick(&["{{ break }}", "{{ continue }}"]).to_string()
                } else {
                    self.text()
                }
            }
            _ => self
                .g
                .pick(&[
                    "{{ define \"x\" }}y{{ end }}",
                    "{{ template \"x\" }}",
                    "{{ block \"x\" . }}y{{ end }}",
                    "{{ else }}",
                    "{{ end }}",
                    "{{}}",
                    "{{ ",
                    "}}",
                    "{{ \"unterminated }}",
                    "{{ `raw }}",
                    "{{ 'c' }}",
                    "{{ .a..b }}",
                    "{{ $ := 1 }}",
                    "{{ nil }}",
                    "{{ .spec | }}",
                    "{{ | .spec }}",
                ])
                .to_string(),
        }
    }

    fn text(&mut self) -> String {
        match self.g.below(4) {
            0 => self.g.hostile_str(),
            1 => " ".to_string(),
            _ => self.g.ident(),
        }
    }

    fn trim_open(&mut self) -> &'static str {
        if self.g.one_in(6) { "{{- " } else { "{{ " }
    }

    fn trim_close(&mut self) -> &'static str {
        if self.g.one_in(6) { " -}}" } else { " }}" }
    }

    fn action(&mut self) -> String {
        let open = self.trim_open();
        let p = self.pipeline();
        let close = self.trim_close();
        format!("{open}{p}{close}")
    }

    fn block(&mut self, kw: &str) -> String {
        self.depth += 1;
        let p = self.pipeline();
        let n = 1 + self.g.below(3);
        let then = self.nodes(n);
        let otherwise = match self.g.below(4) {
            0 => format!("{{{{ else }}}}{}", self.nodes(1)),
            1 => {
                let p2 = self.pipeline();
                format!("{{{{ else {kw} {p2} }}}}{}", self.nodes(1))
            }
            _ => String::new(),
        };
        self.depth -= 1;
        format!("{{{{ {kw} {p} }}}}{then}{otherwise}{{{{ end }}}}")
    }

    fn range(&mut self) -> String {
        self.depth += 1;
        let header = self.range_header();
        let decl = match self.g.below(4) {
            0 => "$e := ".to_string(),
            1 => "$i, $e := ".to_string(),
            2 if !self.vars.is_empty() => "$i, $x = ".to_string(),
            _ => String::new(),
        };
        self.vars.extend(["$e".to_string(), "$i".to_string()]);
        let was = self.in_range;
        self.in_range = true;
        let n = 1 + self.g.below(3);
        let body = self.nodes(n);
        self.in_range = was;
        let otherwise = if self.g.one_in(4) {
            format!("{{{{ else }}}}{}", self.nodes(1))
        } else {
            String::new()
        };
        self.depth -= 1;
        format!("{{{{ range {decl}{header} }}}}{body}{otherwise}{{{{ end }}}}")
    }

    /// What a `range` goes over: any pipeline (huge counts too, literal or from the CR), the
    /// CR's own fields from the root, small counts.
    fn range_header(&mut self) -> String {
        match self.g.below(7) {
            5 | 6 => self.pipeline(),
            0 => self.g.below(50).to_string(),
            1 => (1 + self.g.below(2000)).to_string(),
            2 => "$".to_string(),
            3 => "$.metadata.labels".to_string(),
            _ => format!("$.spec.{}", self.g.pick(SPEC_FIELDS)),
        }
    }

    fn pipeline(&mut self) -> String {
        let mut cmds = vec![self.command(false)];
        for _ in 0..self.g.below(3) {
            cmds.push(self.command(true));
        }
        cmds.join(" | ")
    }

    fn command(&mut self, piped: bool) -> String {
        if !piped && self.g.one_in(3) {
            return self.operand();
        }
        let f = self.func();
        let argc = match self.g.below(6) {
            0 => 0,
            1 => 1 + self.g.below(8),
            _ => self.g.below(3),
        };
        let args: Vec<String> = (0..argc).map(|_| self.operand()).collect();
        if args.is_empty() {
            f
        } else {
            format!("{f} {}", args.join(" "))
        }
    }

    fn func(&mut self) -> String {
        match self.g.below(20) {
            0 => Sentinel::ALL[self.g.below(Sentinel::ALL.len())]
                .name()
                .to_string(),
            1 => self
                .g
                .pick(&[
                    "nosuch",
                    "now",
                    "randAlpha",
                    "semverCompare",
                    "env",
                    "include",
                    "tpl",
                ])
                .to_string(),
            2 => format!("note{}", self.g.below(4)),
            _ => (*self.g.pick(BUILTIN_FUNCTIONS)).to_string(),
        }
    }

    fn field(&mut self) -> String {
        match self.g.below(8) {
            0 => ".".to_string(),
            1 => ".metadata.name".to_string(),
            2 => ".metadata.labels".to_string(),
            3 => ".ork.namespace".to_string(),
            4 => format!(".{}", self.g.ident()),
            5 => format!(".spec.nested.a.a.{}", self.g.ident()),
            _ => format!(".spec.{}", self.g.pick(SPEC_FIELDS)),
        }
    }

    fn operand(&mut self) -> String {
        match self.g.below(12) {
            0..=3 => self.field(),
            4 => {
                let v = if self.vars.is_empty() || self.g.one_in(4) {
                    "$".to_string()
                } else {
                    self.g.pick(&self.vars).clone()
                };
                if self.g.coin() {
                    format!("{v}.spec.{}", self.g.pick(SPEC_FIELDS))
                } else {
                    v
                }
            }
            5 | 6 => self.literal(),
            7 if self.depth < 70 => {
                self.depth += 1;
                let p = self.pipeline();
                self.depth -= 1;
                if self.g.one_in(4) {
                    format!("({p}).spec")
                } else {
                    format!("({p})")
                }
            }
            _ => self.literal(),
        }
    }

    fn literal(&mut self) -> String {
        match self.g.below(10) {
            0 => {
                let mut s = String::new();
                crate::doc::json_string(&self.g.hostile_str(), &mut s);
                s
            }
            1 => format!("`{}`", self.g.hostile_str().replace('`', "")),
            2 => self.g.json_number(),
            3 => self.g.number_text(),
            4 => self.g.pick(&["true", "false", "nil"]).to_string(),
            5 => self
                .g
                .pick(&["'a'", "'\\n'", "'\\x41'", "'\\u00e9'", "''", "'ab'"])
                .to_string(),
            6 => self
                .g
                .pick(&[
                    "\"%v\"",
                    "\"%1024d\"",
                    "\"%s%s%s\"",
                    "\"%!\"",
                    "\"%-1000.500q\"",
                    "\"%x\"",
                ])
                .to_string(),
            7 => self
                .g
                .pick(&["\",\"", "\"\"", "\".\"", "\"a,b\"", "\"1,10\""])
                .to_string(),
            _ => format!("\"{}\"", self.g.ident()),
        }
    }
}
