//! Numbers as people read them: a value too large to mean anything (a ratio against a zero
//! baseline printed with every digit) is capped, in plain output and on screen alike.

use std::borrow::Cow;

/// Numbers too large to read (a ratio against a zero baseline printed with every digit):
/// ≥ 1e30 becomes `> 1e30`, any other integer part of more than 12 digits scientific
/// notation. A line of 300 digits is no measurement, and a terminal wraps it mid-digit.
pub fn tame_numbers(s: &str) -> Cow<'_, str> {
    let b = s.as_bytes();
    let long_run = b.split(|c| !c.is_ascii_digit()).any(|run| run.len() > 12);
    if !long_run {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    while i < b.len() {
        if b[i].is_ascii_digit()
            && (i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b"._-/\\".contains(&b[i - 1])))
        {
            let start = i;
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
            let int_len = i - start;
            let mut end = i;
            if end + 1 < b.len() && b[end] == b'.' && b[end + 1].is_ascii_digit() {
                end += 1;
                while end < b.len() && b[end].is_ascii_digit() {
                    end += 1;
                }
            }
            let followed_by_word =
                end < b.len() && (b[end].is_ascii_alphabetic() || b[end] == b'_');
            if int_len > 12 && !followed_by_word {
                let v: f64 = s[start..end].parse().unwrap_or(f64::INFINITY);
                if v >= 1e30 {
                    out.push_str("> 1e30");
                } else {
                    out.push_str(&format!("{v:.2e}"));
                }
                i = end;
            } else {
                out.push_str(&s[start..end]);
                i = end;
            }
            continue;
        }
        let c = s[i..].chars().next().unwrap_or(' ');
        out.push(c);
        i += c.len_utf8();
    }
    Cow::Owned(out)
}
