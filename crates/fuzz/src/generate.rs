//! The seeded generator every target draws from: small numbers and choices, and strings that
//! look valid, almost valid or plainly hostile (control characters, escapes, bidi overrides,
//! YAML and template syntax, numbers in disguise, huge lengths).
//!
//! One case is one seed: [`case_seed`] mixes the run's seed, the target's name and the case's
//! index, so any case reproduces alone.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// How large generated inputs get.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Profile {
    /// Small inputs, for the short run inside `cargo test` (debug build, seconds).
    Short,
    /// Up to the limits ork enforces (4 MiB Katalogs, 1,000 children, 1 MiB strings).
    Full,
}

/// The seed of case `index` of `target` in a run seeded with `seed`.
pub fn case_seed(seed: u64, target: &str, index: u64) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in target.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    splitmix(seed ^ splitmix(h) ^ splitmix(index.wrapping_add(0x9e37_79b9_7f4a_7c15)))
}

fn splitmix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Strings that break things: parser syntax, control characters, look-alikes.
pub const NASTY: &[&str] = &[
    "",
    " ",
    "\t",
    "\n",
    "\r\n",
    "\r",
    "\0",
    "\u{1b}[31m",
    "\u{1b}[2J",
    "\u{1b}]0;title\u{7}",
    "\u{1b}]8;;http://x\u{1b}\\",
    "\u{1b}",
    "\u{7}",
    "\u{8}",
    "\u{7f}",
    "\u{85}",
    "\u{9b}31m",
    "\u{202e}",
    "\u{202a}",
    "\u{2066}",
    "\u{2069}",
    "\u{200e}",
    "\u{200f}",
    "\u{61c}",
    "\u{200b}",
    "\u{feff}",
    "\u{2028}",
    "\u{2029}",
    "\u{a0}",
    "\u{3000}",
    "é",
    "e\u{301}",
    "日本語",
    "🦀",
    "\u{10ffff}",
    "\u{fffd}",
    "ǅ",
    "İ",
    "ß",
    "{{",
    "}}",
    "{{ .spec }}",
    "{{ $ }}",
    "{{-",
    "-}}",
    "{{/*",
    "*/}}",
    "{{ end }}",
    "{{ else }}",
    "((((",
    "))))",
    "$",
    "|",
    ":",
    ": ",
    "#",
    " #",
    "- ",
    "-",
    "?",
    "? ",
    "&a",
    "*a",
    "!!str",
    "!!binary",
    "!",
    ">",
    "|-",
    ">+",
    "---",
    "...",
    "%YAML 1.2",
    "<<",
    "@",
    "`",
    "'",
    "\"",
    "\\",
    "\\\"",
    "\\u0000",
    "\\ud800",
    ",",
    "[",
    "]",
    "{",
    "}",
    "true",
    "false",
    "null",
    "~",
    "yes",
    "no",
    "on",
    "off",
    "y",
    "NaN",
    ".nan",
    ".inf",
    "-.inf",
    "0x1F",
    "0o17",
    "1e309",
    "-0",
    "0.0",
    "007",
    "1_000",
    "+1",
    "0b101",
    "../../etc/passwd",
    "/etc/passwd",
    "C:\\x",
    "%2e%2e",
    "%00",
    "%",
    "apps/v1",
    "v1",
    "/v1",
    "apps/",
    "Deployment",
    "kube-system",
    "ork-system",
    "default",
    "http://",
    "https://127.0.0.1:1/",
    "file:///etc/passwd",
    "Bearer ",
    "Authorization",
    "\u{0}\u{1}\u{2}",
];

/// Characters from every corner: ASCII, controls, C1, bidi, combining, wide, astral.
const CHAR_POOLS: &[&[char]] = &[
    &['a', 'b', 'z', 'A', 'Z', '0', '9', '-', '.', '_', '/', ' '],
    &[
        '\0', '\u{1}', '\t', '\n', '\r', '\u{b}', '\u{c}', '\u{1b}', '\u{7f}',
    ],
    &['\u{80}', '\u{85}', '\u{9b}', '\u{9f}', '\u{a0}', '\u{ad}'],
    &[
        '\u{200b}', '\u{200e}', '\u{200f}', '\u{202a}', '\u{202e}', '\u{2066}', '\u{2069}',
        '\u{61c}', '\u{2028}', '\u{2029}', '\u{feff}',
    ],
    &['\u{301}', '\u{308}', '\u{20dd}', 'é', 'ñ', 'ø'],
    &['日', '本', 'ｱ', '。', '．', '｡', '＠', '／', '＼', '：'],
    &['🦀', '\u{1f600}', '\u{10ffff}', '\u{e000}', '\u{fffd}'],
    &[
        '{', '}', '(', ')', '[', ']', '"', '\'', '\\', '`', '$', '|', ':', '#', '&', '*', '!', '%',
        '@', '?', ',', '=', '<', '>', '~', '^',
    ],
];

/// The random source of one case, with helpers for structured generation.
#[derive(Debug)]
pub struct Gen {
    rng: SmallRng,
    pub profile: Profile,
    /// Also generate inputs that trigger known, still unfixed bugs that crash or hang the
    /// process (see [`crate::known`]); off by default so a run stays usable.
    pub known: bool,
    /// Whether generators may break the rules of what they build (the default). A target
    /// clears it for cases that must stay valid, with hostility only where any value is
    /// legal, so the code behind validation runs too.
    pub dirty: bool,
    /// The most a single generated string or list may hold (a target that builds hundreds
    /// of strings per case lowers it).
    pub max_huge: usize,
}

impl Gen {
    pub fn new(seed: u64, profile: Profile, known: bool) -> Gen {
        Gen {
            rng: SmallRng::seed_from_u64(seed),
            profile,
            known,
            dirty: true,
            max_huge: 1 << 20,
        }
    }

    /// True one time in `n`, and only when the case may break rules ([`Gen::dirty`]).
    pub fn bad(&mut self, n: u32) -> bool {
        self.dirty && self.one_in(n)
    }

    pub fn full(&self) -> bool {
        self.profile == Profile::Full
    }

    /// `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            self.rng.random_range(0..n)
        }
    }

    /// One of `words`.
    pub fn word(&mut self, words: &[&'static str]) -> &'static str {
        words[self.below(words.len())]
    }

    /// `lo..=hi`.
    pub fn between(&mut self, lo: u64, hi: u64) -> u64 {
        if hi <= lo {
            lo
        } else {
            self.rng.random_range(lo..=hi)
        }
    }

    pub fn one_in(&mut self, n: u32) -> bool {
        n <= 1 || self.rng.random_range(0..n) == 0
    }

    pub fn chance(&mut self, p: f64) -> bool {
        self.rng.random_bool(p.clamp(0.0, 1.0))
    }

    pub fn coin(&mut self) -> bool {
        self.rng.random_bool(0.5)
    }

    pub fn u64(&mut self) -> u64 {
        self.rng.random()
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }

    /// Rarely true: time for an input at the size limits (never in the short profile).
    pub fn huge(&mut self) -> bool {
        self.full() && self.one_in(150)
    }

    /// A length: mostly up to `typical`, sometimes up to `large`, in the full profile rarely up
    /// to `huge`.
    pub fn len(&mut self, typical: usize, large: usize, huge: usize) -> usize {
        match self.below(40) {
            0 if self.full() && self.one_in(8) => self.below(huge.min(self.max_huge) + 1),
            0..=2 => self.below(large.min(if self.full() { large } else { typical * 4 }) + 1),
            _ => self.below(typical + 1),
        }
    }

    /// A random element of [`NASTY`].
    pub fn nasty(&mut self) -> String {
        (*self.pick(NASTY)).to_string()
    }

    /// One character from a random pool.
    pub fn any_char(&mut self) -> char {
        let pool = *self.pick(CHAR_POOLS);
        *self.pick(pool)
    }

    /// A lowercase identifier such as `web-2`.
    pub fn ident(&mut self) -> String {
        const WORDS: &[&str] = &[
            "web", "app", "db", "api", "hello", "team", "svc", "prod", "dev", "cache", "job", "x",
            "a", "worker", "front", "back",
        ];
        let mut s = (*self.pick(WORDS)).to_string();
        if self.coin() {
            s.push('-');
            s.push_str(&self.below(100).to_string());
        }
        s
    }

    /// A DNS-1123 subdomain, sometimes at or just over the 253-character limit.
    pub fn dns_name(&mut self) -> String {
        match self.below(20) {
            0 => "a".repeat(253),
            1 => "a".repeat(254),
            2 => format!("{}.{}", "b".repeat(63), "c".repeat(63)),
            3 => "d".repeat(64),
            _ => {
                let parts = 1 + self.below(3);
                (0..parts)
                    .map(|_| self.ident())
                    .collect::<Vec<_>>()
                    .join(".")
            }
        }
    }

    /// A string that is mostly fine, or hostile in one of many ways.
    pub fn hostile_str(&mut self) -> String {
        match self.below(14) {
            0 | 1 => self.nasty(),
            2 => {
                let n = 2 + self.below(5);
                (0..n).map(|_| self.nasty()).collect()
            }
            3 => {
                let n = self.len(8, 200, 5000);
                (0..n).map(|_| self.any_char()).collect()
            }
            4 => {
                let unit = match self.below(4) {
                    0 => "x".to_string(),
                    1 => self.nasty(),
                    2 => "\u{1b}[31m".to_string(),
                    _ => "é".to_string(),
                };
                let n = self.len(100, 5000, 1 << 20);
                unit.repeat(n.max(1) / unit.len().max(1) + 1)
            }
            5 => self.ident(),
            6 => self.dns_name(),
            7 => self.number_text(),
            8 => {
                let s = self.ident();
                self.mutate_str(&s)
            }
            9 => format!("{}{}{}", self.ident(), self.nasty(), self.ident()),
            10 => {
                let n = 1 + self.below(4);
                (0..n)
                    .map(|_| {
                        self.pick(&[" ", "\t", "\n", "\r\n", "\u{a0}", "\u{2028}"])
                            .to_string()
                    })
                    .collect()
            }
            11 => format!(
                "{{{{ {} }}}}",
                self.pick(&[".spec", "$", ".metadata.name", "x", "(", ""])
            ),
            12 => String::new(),
            _ => {
                let n = 1 + self.below(12);
                (0..n)
                    .map(|_| char::from(b'a' + u8::try_from(self.below(26)).unwrap_or(0)))
                    .collect()
            }
        }
    }

    /// Text that looks like a number to some parser (YAML 1.1, JSON, Go) but may not be one.
    pub fn number_text(&mut self) -> String {
        const NUMBERS: &[&str] = &[
            "0",
            "-0",
            "1",
            "-1",
            "2147483647",
            "2147483648",
            "-2147483649",
            "4294967296",
            "9223372036854775807",
            "9223372036854775808",
            "-9223372036854775808",
            "-9223372036854775809",
            "18446744073709551615",
            "18446744073709551616",
            "1e308",
            "1e309",
            "-1e309",
            "1.7976931348623157e308",
            "5e-324",
            "1e-400",
            "0.1",
            "1.5",
            "1.0",
            "1e2",
            "1E2",
            "0x10",
            "0o10",
            "010",
            "1_000",
            ".5",
            "5.",
            "+5",
            "NaN",
            "Infinity",
            "-Infinity",
            ".inf",
            "123456789012345678901234567890",
        ];
        (*self.pick(NUMBERS)).to_string()
    }

    /// A JSON number literal (always valid JSON number syntax; may be out of any range).
    pub fn json_number(&mut self) -> String {
        const NUMBERS: &[&str] = &[
            "0",
            "-0",
            "1",
            "-1",
            "3",
            "65535",
            "65536",
            "2147483647",
            "2147483648",
            "-2147483648",
            "9223372036854775807",
            "9223372036854775808",
            "-9223372036854775808",
            "18446744073709551615",
            "18446744073709551616",
            "1e308",
            "1.7976931348623157e308",
            "5e-324",
            "1e-400",
            "0.1",
            "1.5",
            "1.0",
            "1e2",
            "-0.0",
            "123456789012345678901234567890",
        ];
        if self.one_in(3) {
            return self.below(10).to_string();
        }
        (*self.pick(NUMBERS)).to_string()
    }

    /// `s` changed a little: a character inserted, removed, replaced, duplicated or re-cased.
    pub fn mutate_str(&mut self, s: &str) -> String {
        let mut chars: Vec<char> = s.chars().collect();
        let edits = 1 + self.below(3);
        for _ in 0..edits {
            let at = self.below(chars.len() + 1);
            match self.below(7) {
                0 => chars.insert(at, self.any_char()),
                1 if at < chars.len() => {
                    chars.remove(at);
                }
                2 if at < chars.len() => chars[at] = self.any_char(),
                3 if at < chars.len() => {
                    let c = chars[at];
                    chars.insert(at, c);
                }
                4 => {
                    for c in chars.iter_mut() {
                        *c = if c.is_ascii_lowercase() {
                            c.to_ascii_uppercase()
                        } else {
                            c.to_ascii_lowercase()
                        };
                    }
                }
                5 => {
                    let n = self.nasty();
                    for (i, c) in n.chars().enumerate() {
                        chars.insert(at + i, c);
                    }
                }
                _ => chars.truncate(at),
            }
        }
        chars.into_iter().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_case_seed_depends_on_seed_target_and_index() {
        let a = case_seed(1, "answer", 7);
        assert_eq!(a, case_seed(1, "answer", 7));
        assert_ne!(a, case_seed(2, "answer", 7));
        assert_ne!(a, case_seed(1, "template", 7));
        assert_ne!(a, case_seed(1, "answer", 8));
    }

    #[test]
    fn the_same_seed_generates_the_same_strings() {
        let mut a = Gen::new(42, Profile::Full, false);
        let mut b = Gen::new(42, Profile::Full, false);
        for _ in 0..100 {
            assert_eq!(a.hostile_str(), b.hostile_str());
        }
    }
}
