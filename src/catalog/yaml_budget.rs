//! The YAML budget: a playbook (or keys) file is checked for size, nesting depth and alias
//! count by a cheap lexical pass before the YAML parser sees it, so an alias bomb
//! ("billion laughs") or a deeply nested document is refused in linear time.

/// Largest YAML file read (bytes).
pub const MAX_YAML_BYTES: usize = 1 << 20;
/// Deepest flow nesting (`[[[…]]]`, `{{…}}`) accepted.
pub const MAX_FLOW_DEPTH: usize = 64;
/// Widest block indentation (columns, counting `- ` sequence markers) accepted.
pub const MAX_INDENT: usize = 256;
/// Most aliases (`*name`) in one file: with at most 8 the expanded document is at most ~18×
/// the file (3·3·2), however the anchors nest.
pub const MAX_ALIASES: usize = 8;

/// A budget overrun: (1-based line, message).
pub type Overrun = (usize, String);

/// Checks `text` against the budget. Quoted scalars and comments are skipped; an alias or a
/// quote counts only where YAML can start a node (after `:`, `-`, `?`, `[`, `{`, `,` or at
/// the start of a line), so prose such as `see *this*` is not mistaken for one.
pub fn check(text: &str) -> Result<(), Overrun> {
    if text.len() > MAX_YAML_BYTES {
        return Err((
            1,
            format!(
                "{} bytes is over the {} KiB YAML size budget",
                text.len(),
                MAX_YAML_BYTES >> 10
            ),
        ));
    }
    #[derive(PartialEq)]
    enum Q {
        No,
        Single,
        Double,
    }
    let mut q = Q::No;
    let mut depth = 0usize;
    let mut aliases = 0usize;
    for (ln, line) in text.split('\n').enumerate() {
        let ln = ln + 1;
        let b = line.as_bytes();
        if q == Q::No && depth == 0 {
            let mut i = 0;
            while i < b.len() && b[i] == b' ' {
                i += 1;
            }
            while i + 1 < b.len() && b[i] == b'-' && (b[i + 1] == b' ' || b[i + 1] == b'\t') {
                i += 2;
                while i < b.len() && b[i] == b' ' {
                    i += 1;
                }
            }
            if i > MAX_INDENT {
                return Err((
                    ln,
                    format!(
                        "nested deeper than the YAML budget ({MAX_INDENT} columns of indentation)"
                    ),
                ));
            }
        }
        // The last non-space character before the current one on this line (None = start).
        let mut prev: Option<u8> = None;
        let mut i = 0;
        while i < b.len() {
            let c = b[i];
            match q {
                Q::Single => {
                    if c == b'\'' {
                        if b.get(i + 1) == Some(&b'\'') {
                            i += 1;
                        } else {
                            q = Q::No;
                        }
                    }
                    i += 1;
                    prev = Some(b'x');
                    continue;
                }
                Q::Double => {
                    if c == b'\\' {
                        i += 1;
                    } else if c == b'"' {
                        q = Q::No;
                    }
                    i += 1;
                    prev = Some(b'x');
                    continue;
                }
                Q::No => {}
            }
            let node_start = matches!(prev, None | Some(b':' | b'-' | b'?' | b'[' | b'{' | b','));
            let after_space = i == 0 || matches!(b[i - 1], b' ' | b'\t');
            match c {
                b'#' if after_space => break,
                b'\'' if node_start => q = Q::Single,
                b'"' if node_start => q = Q::Double,
                b'[' | b'{' => {
                    depth += 1;
                    if depth > MAX_FLOW_DEPTH {
                        return Err((
                            ln,
                            format!(
                                "flow collections nested deeper than the YAML budget ({MAX_FLOW_DEPTH})"
                            ),
                        ));
                    }
                }
                b']' | b'}' => depth = depth.saturating_sub(1),
                b'*' if node_start
                    && b.get(i + 1)
                        .is_some_and(|n| !n.is_ascii_whitespace() && !b",[]{}".contains(n)) =>
                {
                    aliases += 1;
                    if aliases > MAX_ALIASES {
                        return Err((
                            ln,
                            format!(
                                "more than {MAX_ALIASES} YAML aliases (*name); refused (alias expansion budget)"
                            ),
                        ));
                    }
                }
                _ => {}
            }
            if !matches!(c, b' ' | b'\t' | b'\r') {
                prev = Some(c);
            }
            i += 1;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alias_bombs_deep_nesting_and_size_are_refused() {
        let mut bomb = String::from("a: &a [x, x, x, x, x, x, x, x, x]\n");
        for i in 1..10 {
            bomb.push_str(&format!(
                "a{i}: &a{i} [*a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}]\n",
                p = if i == 1 {
                    String::new()
                } else {
                    (i - 1).to_string()
                }
            ));
        }
        assert!(check(&bomb).unwrap_err().1.contains("alias"));
        let deep = format!("x: {}{}\n", "[".repeat(100), "]".repeat(100));
        assert!(check(&deep).unwrap_err().1.contains("nested"));
        let block = (0..300)
            .map(|i| format!("{}k{i}:\n", " ".repeat(i)))
            .collect::<String>();
        assert!(check(&block).unwrap_err().1.contains("nested"));
        assert!(check(&"x".repeat(MAX_YAML_BYTES + 1)).is_err());
    }

    #[test]
    fn prose_with_stars_quotes_and_brackets_passes() {
        let ok = "entries:\n  - id: A1\n    title: \"see *this* [a] {b}\"\n    note: don't use *bold* or x[0] # *not an alias\n    fix: 'it''s *fine*'\n    list: [a, b, 'c, *d']\n";
        check(ok).unwrap();
        let two = "a: &x 1\nb: *x\nc: [*x, *x]\n";
        check(two).unwrap();
    }

    #[test]
    fn the_shipped_playbook_is_within_budget() {
        for (name, text) in super::super::load::embedded_texts() {
            check(text).unwrap_or_else(|e| panic!("{name}: {e:?}"));
        }
    }
}
