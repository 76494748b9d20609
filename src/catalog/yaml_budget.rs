//! The YAML budget: a playbook (or keys) file is checked for size, nesting depth and alias
//! count before it is deserialized, so an alias bomb ("billion laughs") or a deeply nested
//! document is refused in linear time. The counts are taken on the event stream of the very
//! parser `serde_yaml_ng` uses (`unsafe-libyaml`), so a quote, an alias or a bracket counts
//! exactly where the parser sees one: a `'` inside a plain scalar (`a, 'b`) is text to both,
//! and an alias behind it is still counted. The pass stops at the first overrun, before the
//! scanner's per-token cost (which grows with the flow depth) can add up.

use std::mem::MaybeUninit;

use unsafe_libyaml as unsafe_yaml;

/// Largest YAML file read (bytes).
pub const MAX_YAML_BYTES: usize = 1 << 20;
/// Deepest flow nesting (`[[[…]]]`, `{{…}}`) accepted.
pub const MAX_FLOW_DEPTH: usize = 64;
/// Widest block indentation (the column a block mapping or sequence starts at) accepted.
pub const MAX_INDENT: usize = 256;
/// Most aliases (`*name`) in one file: with at most 8 the expanded document is at most ~18×
/// the file (3·3·2), however the anchors nest.
pub const MAX_ALIASES: usize = 8;

/// A budget overrun: (1-based line, message).
pub type Overrun = (usize, String);

/// A libyaml parser over one string; deleted on drop. Boxed: libyaml keeps a pointer to the
/// parser itself (its read handler's data), so it must not move once initialised.
struct Events<'a> {
    parser: Box<MaybeUninit<unsafe_yaml::yaml_parser_t>>,
    _input: &'a [u8],
}

/// What the budget needs of one event.
enum Ev {
    Alias,
    /// A collection opens: flow style or not, and the column it starts at.
    Start {
        flow: bool,
        col: usize,
    },
    End,
    Other,
    Done,
}

impl<'a> Events<'a> {
    fn new(input: &'a [u8]) -> Option<Events<'a>> {
        let mut parser = Box::new(MaybeUninit::<unsafe_yaml::yaml_parser_t>::uninit());
        // SAFETY: `yaml_parser_initialize` zeroes and sets up the (boxed, never moved) parser;
        // the input outlives it (`_input` borrows it for the parser's lifetime).
        unsafe {
            let p = parser.as_mut_ptr();
            if unsafe_yaml::yaml_parser_initialize(p).fail {
                return None;
            }
            unsafe_yaml::yaml_parser_set_encoding(p, unsafe_yaml::YAML_UTF8_ENCODING);
            unsafe_yaml::yaml_parser_set_input_string(p, input.as_ptr(), input.len() as u64);
        }
        Some(Events {
            parser,
            _input: input,
        })
    }

    /// The next event and its 1-based line; `None` on a syntax error (the parser that reads
    /// the file afterwards reports it, in its own words). Not called again after `None`.
    fn next(&mut self) -> Option<(Ev, usize)> {
        let mut event = MaybeUninit::<unsafe_yaml::yaml_event_t>::uninit();
        // SAFETY: the parser was initialised in `new`; an event that `yaml_parser_parse`
        // filled in is read, then freed once with `yaml_event_delete`.
        unsafe {
            let p = self.parser.as_mut_ptr();
            let e = event.as_mut_ptr();
            if unsafe_yaml::yaml_parser_parse(p, e).fail {
                return None;
            }
            let line = (*e).start_mark.line as usize + 1;
            let col = (*e).start_mark.column as usize;
            let ev = match (*e).type_ {
                unsafe_yaml::YAML_ALIAS_EVENT => Ev::Alias,
                unsafe_yaml::YAML_SEQUENCE_START_EVENT => Ev::Start {
                    flow: (*e).data.sequence_start.style == unsafe_yaml::YAML_FLOW_SEQUENCE_STYLE,
                    col,
                },
                unsafe_yaml::YAML_MAPPING_START_EVENT => Ev::Start {
                    flow: (*e).data.mapping_start.style == unsafe_yaml::YAML_FLOW_MAPPING_STYLE,
                    col,
                },
                // The end events carry no style: `check` matches them with its own stack.
                unsafe_yaml::YAML_SEQUENCE_END_EVENT | unsafe_yaml::YAML_MAPPING_END_EVENT => {
                    Ev::End
                }
                unsafe_yaml::YAML_STREAM_END_EVENT => Ev::Done,
                _ => Ev::Other,
            };
            unsafe_yaml::yaml_event_delete(e);
            Some((ev, line))
        }
    }
}

impl Drop for Events<'_> {
    fn drop(&mut self) {
        // SAFETY: initialised in `new` (a failed initialisation never builds an `Events`).
        unsafe { unsafe_yaml::yaml_parser_delete(self.parser.as_mut_ptr()) }
    }
}

/// Checks `text` against the budget, on the events the YAML parser produces from it.
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
    let Some(mut events) = Events::new(text.as_bytes()) else {
        return Ok(());
    };
    // Open collections, innermost last: whether each is a flow one.
    let mut open: Vec<bool> = Vec::new();
    let mut flow_depth = 0usize;
    let mut aliases = 0usize;
    while let Some((ev, line)) = events.next() {
        match ev {
            Ev::Start { flow: false, col } if col > MAX_INDENT => {
                return Err((
                    line,
                    format!(
                        "nested deeper than the YAML budget ({MAX_INDENT} columns of indentation)"
                    ),
                ));
            }
            Ev::Alias => {
                aliases += 1;
                if aliases > MAX_ALIASES {
                    return Err((
                        line,
                        format!(
                            "more than {MAX_ALIASES} YAML aliases (*name); refused (alias expansion budget)"
                        ),
                    ));
                }
            }
            Ev::Start { flow, .. } => {
                open.push(flow);
                if flow {
                    flow_depth += 1;
                    if flow_depth > MAX_FLOW_DEPTH {
                        return Err((
                            line,
                            format!(
                                "flow collections nested deeper than the YAML budget ({MAX_FLOW_DEPTH})"
                            ),
                        ));
                    }
                }
            }
            Ev::End => {
                if open.pop() == Some(true) {
                    flow_depth -= 1;
                }
            }
            Ev::Done => break,
            Ev::Other => {}
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
    fn quotes_count_only_where_the_parser_sees_them() {
        // A `'` after `, ` inside a plain scalar is text: the aliases behind it still count.
        let mut bypass = String::from("q: a, 'b\nx0: &a0 [lol, lol]\n");
        for i in 1..10 {
            bypass.push_str(&format!("x{i}: &a{i} [*a{p}, *a{p}]\n", p = i - 1));
        }
        let e = check(&bypass).unwrap_err();
        assert!(e.1.contains("alias") && e.0 == 7, "{e:?}");
        let deep = format!("q: a, 'b\nd: {}{}\n", "[".repeat(100), "]".repeat(100));
        assert!(check(&deep).unwrap_err().1.contains("nested"));
        // The same inside a block scalar, a multi-line plain scalar and after an anchor.
        for head in [
            "q: |\n  'b\n",
            "q: a\n  'b\n",
            "q: &x 'a #' \n",
            "q: [a\n  'b]\n",
        ] {
            let t = format!("{head}{}", bypass.split_once('\n').unwrap().1);
            assert!(check(&t).unwrap_err().1.contains("alias"), "{head:?}");
        }
        // Real quotes still hide what is inside them.
        check("q: 'a, *b, *c, *d, *e, *f, *g, *h, *i, *j [[[[' \n").unwrap();
        check(&format!("q: \"{}\"\n", "[".repeat(200))).unwrap();
    }

    #[test]
    fn the_shipped_playbook_is_within_budget() {
        for (name, text) in super::super::load::embedded_texts() {
            check(text).unwrap_or_else(|e| panic!("{name}: {e:?}"));
        }
    }
}
