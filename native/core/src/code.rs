//! The *code view* of program source (`simscan/fingerprint/code.py` states why each choice was made):
//! recognised by content ([`looks_like_code`]), then every identifier outside comments, string and
//! character literals and include/import lines that is not a keyword becomes one placeholder.

use crate::normalize::Normalizer;
use crate::tables::{tables, Tables};

/// Stands for every identifier (a private-use character: normalisation keeps it as one unit).
pub const PLACEHOLDER: u32 = 0xE000;
/// Pads a replaced identifier to its length in [`code_form`] (ZERO WIDTH SPACE: dropped by
/// normalisation), so that offsets into the code form are offsets into the text.
pub const FILLER: u32 = 0x200B;
/// Longest text (characters, a CR LF counted once) that gets a code view.
pub const MAX_CODE_CHARS: usize = 1 << 20;
/// Shortest text that gets a code view.
pub const MIN_CODE_CHARS: usize = 450;
/// Characters examined by [`looks_like_code`].
pub const SAMPLE_CHARS: usize = 1 << 14;

/// Keywords of the C family (case-sensitive), kept as text in the code view.
pub const KEYWORDS: &[&str] = &[
    "abstract",
    "as",
    "assert",
    "async",
    "auto",
    "await",
    "break",
    "case",
    "catch",
    "class",
    "const",
    "constexpr",
    "continue",
    "def",
    "default",
    "defer",
    "delete",
    "do",
    "dynamic",
    "elif",
    "else",
    "enum",
    "explicit",
    "export",
    "extends",
    "extern",
    "false",
    "final",
    "finally",
    "fn",
    "for",
    "foreach",
    "friend",
    "fun",
    "func",
    "function",
    "go",
    "goto",
    "if",
    "impl",
    "implements",
    "import",
    "in",
    "inline",
    "instanceof",
    "interface",
    "internal",
    "is",
    "let",
    "loop",
    "match",
    "mod",
    "module",
    "mut",
    "namespace",
    "native",
    "new",
    "nil",
    "null",
    "object",
    "operator",
    "override",
    "package",
    "private",
    "protected",
    "pub",
    "public",
    "range",
    "readonly",
    "record",
    "register",
    "return",
    "sealed",
    "select",
    "sizeof",
    "static",
    "struct",
    "super",
    "switch",
    "synchronized",
    "template",
    "this",
    "throw",
    "throws",
    "trait",
    "transient",
    "true",
    "try",
    "type",
    "typedef",
    "typename",
    "typeof",
    "union",
    "unsafe",
    "use",
    "using",
    "val",
    "var",
    "virtual",
    "volatile",
    "when",
    "where",
    "while",
    "yield",
];

const LF: u32 = b'\n' as u32;
const CR: u32 = b'\r' as u32;

fn is_keyword(word: &[u32]) -> bool {
    if word.len() > 12
        || !word
            .iter()
            .all(|&c| (b'a' as u32..=b'z' as u32).contains(&c))
    {
        return false;
    }
    let s: String = word.iter().map(|&c| c as u8 as char).collect();
    KEYWORDS.binary_search(&s.as_str()).is_ok()
}

/// Characters as the code view's size limits count them: a CR LF counts once.
pub fn code_length(text: &[u32]) -> usize {
    text.len() - text.windows(2).filter(|p| p[0] == CR && p[1] == LF).count()
}

/// Whether `text` reads as C-family program source: of its first [`SAMPLE_CHARS`] characters
/// (CR LF read as LF), a `{`, at least 3 non-blank lines, at least 40 % of them ending in `;`, `{`
/// or `}` (a `//` comment may follow), and fewer `<` than non-blank lines; [`MIN_CODE_CHARS`] to
/// [`MAX_CODE_CHARS`] characters in all.
pub fn looks_like_code(text: &[u32]) -> bool {
    let mut n = text.len();
    let brace = b'{' as u32;
    if n < MIN_CODE_CHARS || !text[..n.min(2 * SAMPLE_CHARS)].contains(&brace) {
        return false;
    }
    if !(2 * MIN_CODE_CHARS..=MAX_CODE_CHARS).contains(&n) {
        n = code_length(text);
    }
    if !(MIN_CODE_CHARS..=MAX_CODE_CHARS).contains(&n) {
        return false;
    }
    let head = &text[..text.len().min(2 * SAMPLE_CHARS)];
    let mut sample: Vec<u32> = Vec::with_capacity(SAMPLE_CHARS);
    let mut i = 0;
    while i < head.len() && sample.len() < SAMPLE_CHARS {
        if head[i] == CR && i + 1 < head.len() && head[i + 1] == LF {
            i += 1;
        }
        sample.push(head[i]);
        i += 1;
    }
    if !sample.contains(&brace) {
        return false;
    }
    let t = tables();
    let (mut lines, mut code_lines) = (0usize, 0usize);
    for line in sample.split(|&c| c == LF) {
        let first = line
            .iter()
            .position(|&c| c != b' ' as u32 && c != b'\t' as u32);
        if let Some(p) = first {
            if !t.is_space(line[p]) {
                lines += 1;
            }
        }
        if ends_like_code(line) {
            code_lines += 1;
        }
    }
    let lt = sample.iter().filter(|&&c| c == b'<' as u32).count();
    if lines < 3 || lt >= lines {
        return false;
    }
    code_lines * 5 >= lines * 2
}

/// `[;{}][ \t]*(?://[^\n]*)?\r?$` somewhere in the line.
fn ends_like_code(line: &[u32]) -> bool {
    line.iter().enumerate().any(|(q, &c)| {
        if !matches!(c, 0x3B | 0x7B | 0x7D) {
            return false;
        }
        let rest = &line[q + 1..];
        let p = rest
            .iter()
            .position(|&c| c != b' ' as u32 && c != b'\t' as u32)
            .unwrap_or(rest.len());
        let rest = &rest[p..];
        rest.is_empty() || rest == [CR] || rest.starts_with(&[b'/' as u32, b'/' as u32])
    })
}

fn at_line_start(text: &[u32], i: usize) -> bool {
    i == 0 || text[i - 1] == LF
}

fn skip_blanks(text: &[u32], mut i: usize) -> usize {
    while i < text.len() && (text[i] == b' ' as u32 || text[i] == b'\t' as u32) {
        i += 1;
    }
    i
}

fn starts_with(text: &[u32], i: usize, s: &str) -> bool {
    let b = s.as_bytes();
    i + b.len() <= text.len()
        && text[i..i + b.len()]
            .iter()
            .zip(b)
            .all(|(&c, &x)| c == x as u32)
}

/// The end of an include or import line starting at `i` (a line start), if there is one:
/// `[ \t]*#[ \t]*include\b[^\n]*` or `[ \t]*(?:import|package|using|use)[ \t]+[\w.*: \t]+;`.
fn import_line(t: &Tables, text: &[u32], i: usize) -> Option<usize> {
    let n = text.len();
    let j = skip_blanks(text, i);
    if j < n && text[j] == b'#' as u32 {
        let k = skip_blanks(text, j + 1);
        if starts_with(text, k, "include") && (k + 7 == n || !t.is_word_re(text[k + 7])) {
            return Some(text[k..].iter().position(|&c| c == LF).map_or(n, |p| k + p));
        }
        return None;
    }
    let kw = ["import", "package", "using", "use"]
        .into_iter()
        .find(|w| starts_with(text, j, w))?;
    let k = j + kw.len();
    let in_class = |c: u32| {
        t.is_word_re(c) || matches!(c, 0x2E | 0x2A | 0x3A | 0x20 | 0x09) // . * : space tab
    };
    let run = text[k..]
        .iter()
        .position(|&c| !in_class(c))
        .unwrap_or(n - k);
    let blank = |c: u32| c == b' ' as u32 || c == b'\t' as u32;
    if run >= 2 && blank(text[k]) && k + run < n && text[k + run] == b';' as u32 {
        return Some(k + run + 1);
    }
    None
}

/// The end of a string or character literal opened by the quote at `i`: the closing quote, else
/// the line end (a backslash escapes the next character on the same line).
fn literal_end(text: &[u32], i: usize) -> usize {
    let n = text.len();
    let quote = text[i];
    let mut j = i + 1;
    while j < n && text[j] != LF {
        if text[j] == quote {
            return j + 1;
        }
        if text[j] == b'\\' as u32 {
            j += if j + 1 < n && text[j + 1] != LF { 2 } else { 1 };
            if j == n || text[j] == LF {
                break;
            }
            continue;
        }
        j += 1;
    }
    j
}

/// Calls `token(start, end, is_name)` for the pieces of `text` in order: names (identifiers to
/// replace) and everything else.
fn scan(text: &[u32], mut token: impl FnMut(usize, usize, bool)) {
    let t = tables();
    let n = text.len();
    let mut i = 0;
    while i < n {
        let c = text[i];
        let j = if let Some(e) = at_line_start(text, i)
            .then(|| import_line(t, text, i))
            .flatten()
        {
            e
        } else if starts_with(text, i, "//") {
            text[i..].iter().position(|&c| c == LF).map_or(n, |p| i + p)
        } else if starts_with(text, i, "/*") {
            (i + 2..n.saturating_sub(1))
                .find(|&k| text[k] == b'*' as u32 && text[k + 1] == b'/' as u32)
                .map_or(n, |k| k + 2)
        } else if c == b'"' as u32 || c == b'\'' as u32 {
            literal_end(text, i)
        } else if t.is_word(c) {
            let mut j = i;
            while j < n && t.is_word(text[j]) {
                j += 1;
            }
            token(i, j, !t.is_digit(c) && !is_keyword(&text[i..j]));
            i = j;
            continue;
        } else {
            i + 1
        };
        token(i, j, false);
        i = j;
    }
}

/// `text` with each name replaced by [`PLACEHOLDER`] and [`FILLER`]s: the same length.
pub fn code_form(text: &[u32]) -> Vec<u32> {
    let mut out = Vec::with_capacity(text.len());
    scan(text, |a, b, name| {
        if name {
            out.push(PLACEHOLDER);
            out.extend(std::iter::repeat_n(FILLER, b - a - 1));
        } else {
            out.extend_from_slice(&text[a..b]);
        }
    });
    out
}

/// Which normalised code-form units the code view keeps: all but a space between two placeholders.
pub fn glue_mask(units: &[u32]) -> Vec<bool> {
    let mut keep = vec![true; units.len()];
    for i in 1..units.len().saturating_sub(1) {
        if units[i] == b' ' as u32 && units[i - 1] == PLACEHOLDER && units[i + 1] == PLACEHOLDER {
            keep[i] = false;
        }
    }
    keep
}

/// The code view's units and each one's character in `text` (the code form keeps offsets):
/// the code form, normalised, glued.
pub fn code_units_with_offsets(text: &[u32]) -> (Vec<u32>, Vec<u32>) {
    let t = tables();
    let mut norm = Normalizer::new(&t.heavy);
    let (mut units, mut src) = (
        Vec::with_capacity(text.len()),
        Vec::with_capacity(text.len()),
    );
    norm.feed_offsets(&code_form(text), &mut units, &mut src);
    let keep = glue_mask(&units);
    let mut out_u = Vec::with_capacity(units.len());
    let mut out_s = Vec::with_capacity(units.len());
    for ((u, s), k) in units.into_iter().zip(src).zip(keep) {
        if k {
            out_u.push(u);
            out_s.push(s.min(u32::MAX as usize) as u32);
        }
    }
    (out_u, out_s)
}

/// The code view's units: the code form, normalised, glued.
pub fn code_units(text: &[u32]) -> Vec<u32> {
    let t = tables();
    let mut norm = Normalizer::new(&t.heavy);
    let mut units = Vec::with_capacity(text.len());
    let mut form = Vec::with_capacity(4096);
    scan(text, |a, b, name| {
        if name {
            form.push(PLACEHOLDER);
        } else {
            form.extend_from_slice(&text[a..b]);
        }
        if form.len() >= 4096 {
            norm.feed(&form, &mut units);
            form.clear();
        }
    });
    norm.feed(&form, &mut units);
    let keep = glue_mask(&units);
    units
        .into_iter()
        .zip(keep)
        .filter_map(|(u, k)| k.then_some(u))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cps(s: &str) -> Vec<u32> {
        s.chars().map(|c| c as u32).collect()
    }

    fn show(u: &[u32]) -> String {
        u.iter()
            .filter(|&&c| c != FILLER)
            .map(|&c| {
                if c == PLACEHOLDER {
                    '@'
                } else {
                    char::from_u32(c).unwrap()
                }
            })
            .collect()
    }

    #[test]
    fn keywords_are_sorted() {
        assert!(KEYWORDS.windows(2).all(|p| p[0] < p[1]));
    }

    #[test]
    fn names_become_placeholders() {
        let src = "#include <stdio.h>\nint main(void) { // count\n  int n = 10; char *s = \"hi there\";\n  return n; }\n";
        let form = code_form(&cps(src));
        assert_eq!(form.len(), src.chars().count());
        assert_eq!(
            show(&form),
            "#include <stdio.h>\n@ @(@) { // count\n  @ @ = 10; @ *@ = \"hi there\";\n  return @; }\n"
        );
        assert_eq!(show(&code_units(&cps("a.b(c) + x_1 = 10"))), "@@@@ 10");
    }

    #[test]
    fn recognises_c_family_source() {
        let java = "public class A {\n  int x;\n  void f() {\n    x = 1;\n  }\n}\n".repeat(20);
        assert!(looks_like_code(&cps(&java)));
        let prose = "This is prose. It has sentences; some of them end oddly.\n".repeat(20);
        assert!(!looks_like_code(&cps(&prose)));
    }
}
