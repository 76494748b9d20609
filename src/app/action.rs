//! Actions (what a key means, independent of which key) and the key map: built-in
//! defaults plus the user's `key = action` lines from `keys.conf` under the XDG config dir.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

/// A named command a key can be bound to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    Quit,
    Back,
    Up,
    Down,
    Top,
    Bottom,
    PageUp,
    PageDown,
    Select,
    NextPane,
    Search,
    Help,
    Palette,
    RunScreen,
    Home,
    Check,
    Override,
    WalkBack,
    ExportMd,
    ExportJson,
    ToggleFuzzy,
    CycleDomain,
    WalkFrom,
    Series,
    LogScale,
    Follow,
}

impl Action {
    /// Every action with its config-file name and a one-line description (help overlay).
    pub const ALL: [(Action, &'static str); 26] = [
        (Action::Quit, "quit"),
        (Action::Back, "back"),
        (Action::Up, "up"),
        (Action::Down, "down"),
        (Action::Top, "top"),
        (Action::Bottom, "bottom"),
        (Action::PageUp, "page_up"),
        (Action::PageDown, "page_down"),
        (Action::Select, "select"),
        (Action::NextPane, "next_pane"),
        (Action::Search, "search"),
        (Action::Help, "help"),
        (Action::Palette, "palette"),
        (Action::RunScreen, "run"),
        (Action::Home, "home"),
        (Action::Check, "check"),
        (Action::Override, "override"),
        (Action::WalkBack, "walk_back"),
        (Action::ExportMd, "export_md"),
        (Action::ExportJson, "export_json"),
        (Action::ToggleFuzzy, "toggle_fuzzy"),
        (Action::CycleDomain, "domain"),
        (Action::WalkFrom, "walk_from"),
        (Action::Series, "series"),
        (Action::LogScale, "log_scale"),
        (Action::Follow, "follow"),
    ];

    pub fn name(self) -> &'static str {
        Action::ALL
            .iter()
            .find(|(a, _)| *a == self)
            .map(|(_, n)| *n)
            .unwrap_or("?")
    }

    pub fn from_name(s: &str) -> Option<Action> {
        let s = s.trim().to_ascii_lowercase().replace('-', "_");
        Action::ALL.iter().find(|(_, n)| *n == s).map(|(a, _)| *a)
    }
}

/// A key as the map stores it: code plus the Ctrl/Alt modifiers (Shift is in the char).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Key {
    pub code: KeyCode,
    pub ctrl: bool,
    pub alt: bool,
}

impl Key {
    pub fn from_event(ev: &KeyEvent) -> Key {
        Key {
            code: ev.code,
            ctrl: ev.modifiers.contains(KeyModifiers::CONTROL),
            alt: ev.modifiers.contains(KeyModifiers::ALT),
        }
    }

    const fn plain(code: KeyCode) -> Key {
        Key {
            code,
            ctrl: false,
            alt: false,
        }
    }

    const fn ch(c: char) -> Key {
        Key::plain(KeyCode::Char(c))
    }

    /// Parse `q`, `G`, `?`, `ctrl-f`, `alt-x`, `esc`, `enter`, `tab`, `up`, `f1`, `space`.
    pub fn parse(s: &str) -> Option<Key> {
        let s = s.trim();
        let mut ctrl = false;
        let mut alt = false;
        let mut rest = s;
        loop {
            let lower = rest.to_ascii_lowercase();
            if let Some(r) = lower
                .strip_prefix("ctrl-")
                .or_else(|| lower.strip_prefix("c-"))
            {
                ctrl = true;
                rest = &rest[rest.len() - r.len()..];
            } else if let Some(r) = lower.strip_prefix("alt-") {
                alt = true;
                rest = &rest[rest.len() - r.len()..];
            } else {
                break;
            }
        }
        let code = match rest.to_ascii_lowercase().as_str() {
            "esc" | "escape" => KeyCode::Esc,
            "enter" | "return" => KeyCode::Enter,
            "tab" => KeyCode::Tab,
            "backtab" => KeyCode::BackTab,
            "backspace" | "bs" => KeyCode::Backspace,
            "up" => KeyCode::Up,
            "down" => KeyCode::Down,
            "left" => KeyCode::Left,
            "right" => KeyCode::Right,
            "home" => KeyCode::Home,
            "end" => KeyCode::End,
            "pageup" | "pgup" => KeyCode::PageUp,
            "pagedown" | "pgdn" => KeyCode::PageDown,
            "space" => KeyCode::Char(' '),
            l if l.len() > 1 && l.starts_with('f') && l[1..].parse::<u8>().is_ok() => {
                KeyCode::F(l[1..].parse().ok()?)
            }
            _ => {
                let mut it = rest.chars();
                let c = it.next()?;
                if it.next().is_some() {
                    return None;
                }
                KeyCode::Char(if ctrl { c.to_ascii_lowercase() } else { c })
            }
        };
        Some(Key { code, ctrl, alt })
    }

    /// Short label for the footer and help (`ctrl-c`, `?`, `Enter`).
    pub fn label(&self) -> String {
        let base = match self.code {
            KeyCode::Char(' ') => "Space".to_string(),
            KeyCode::Char(c) => c.to_string(),
            KeyCode::Esc => "Esc".into(),
            KeyCode::Enter => "Enter".into(),
            KeyCode::Tab => "Tab".into(),
            KeyCode::BackTab => "S-Tab".into(),
            KeyCode::Backspace => "Bksp".into(),
            KeyCode::Up => "↑".into(),
            KeyCode::Down => "↓".into(),
            KeyCode::Left => "←".into(),
            KeyCode::Right => "→".into(),
            KeyCode::Home => "Home".into(),
            KeyCode::End => "End".into(),
            KeyCode::PageUp => "PgUp".into(),
            KeyCode::PageDown => "PgDn".into(),
            KeyCode::F(n) => format!("F{n}"),
            _ => "?".into(),
        };
        match (self.ctrl, self.alt) {
            (true, _) => format!("ctrl-{base}"),
            (_, true) => format!("alt-{base}"),
            _ => base,
        }
    }
}

/// Key -> action for the normal (non-typing) mode of every screen.
#[derive(Debug, Clone)]
pub struct Keymap {
    map: HashMap<Key, Action>,
}

impl Default for Keymap {
    fn default() -> Self {
        use KeyCode::*;
        let pairs: [(Key, Action); 34] = [
            (Key::ch('q'), Action::Quit),
            (Key::plain(Esc), Action::Back),
            (Key::ch('k'), Action::Up),
            (Key::plain(Up), Action::Up),
            (Key::ch('j'), Action::Down),
            (Key::plain(Down), Action::Down),
            (Key::ch('g'), Action::Top),
            (Key::plain(Home), Action::Top),
            (Key::ch('G'), Action::Bottom),
            (Key::plain(End), Action::Bottom),
            (Key::plain(PageUp), Action::PageUp),
            (Key::plain(PageDown), Action::PageDown),
            (Key::plain(Enter), Action::Select),
            (Key::ch('l'), Action::Select),
            (Key::plain(Tab), Action::NextPane),
            (Key::ch('/'), Action::Search),
            (Key::ch('?'), Action::Help),
            (Key::ch(':'), Action::Palette),
            (Key::ch('r'), Action::RunScreen),
            (Key::ch('H'), Action::Home),
            (Key::ch('c'), Action::Check),
            (Key::ch('o'), Action::Override),
            (Key::ch('b'), Action::WalkBack),
            (Key::plain(Backspace), Action::WalkBack),
            (Key::ch('h'), Action::Back),
            (Key::plain(Left), Action::Back),
            (Key::plain(Right), Action::Select),
            (Key::ch('e'), Action::ExportMd),
            (Key::ch('E'), Action::ExportJson),
            (Key::ch('d'), Action::CycleDomain),
            (Key::ch('w'), Action::WalkFrom),
            (Key::ch('s'), Action::Series),
            (Key::ch('L'), Action::LogScale),
            (Key::ch('F'), Action::Follow),
        ];
        Keymap {
            map: pairs.into_iter().collect(),
        }
    }
}

impl Keymap {
    pub fn get(&self, ev: &KeyEvent) -> Option<Action> {
        let k = Key::from_event(ev);
        self.map.get(&k).copied().or_else(|| {
            // A terminal may report `G` with SHIFT; the char already says it.
            if let KeyCode::Char(c) = k.code {
                self.map
                    .get(&Key {
                        code: KeyCode::Char(c),
                        ctrl: k.ctrl,
                        alt: k.alt,
                    })
                    .copied()
            } else {
                None
            }
        })
    }

    pub fn bind(&mut self, key: Key, action: Action) {
        self.map.insert(key, action);
    }

    /// Keys bound to an action, sorted for stable display.
    pub fn keys_for(&self, action: Action) -> Vec<String> {
        let mut v: Vec<String> = self
            .map
            .iter()
            .filter(|(_, a)| **a == action)
            .map(|(k, _)| k.label())
            .collect();
        v.sort_by_key(|s| (s.chars().count(), s.clone()));
        v
    }

    /// The first key for an action (footer), or the action name when unbound.
    pub fn key_for(&self, action: Action) -> String {
        let preferred = match action {
            Action::Select => Some(Key::plain(KeyCode::Enter)),
            Action::Back => Some(Key::plain(KeyCode::Esc)),
            _ => None,
        };
        if let Some(k) = preferred.filter(|k| self.map.get(k) == Some(&action)) {
            return k.label();
        }
        self.keys_for(action)
            .into_iter()
            .next()
            .unwrap_or_else(|| action.name().to_string())
    }

    /// Apply `key = action` lines. Blank lines and `#` comments are ignored; a bad line is
    /// skipped and reported as `file:line: what is wrong`.
    pub fn apply_config(&mut self, text: &str, file: &Path) -> Vec<String> {
        let mut problems = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let at = format!("{}:{}", file.display(), i + 1);
            let Some((k, a)) = line.rsplit_once('=') else {
                problems.push(format!("{at}: expected `key = action`"));
                continue;
            };
            let (k, a) = (k.trim(), a.trim());
            let k = if k.is_empty() && line.starts_with('=') {
                "="
            } else {
                k
            };
            let Some(key) = Key::parse(k) else {
                problems.push(format!("{at}: unknown key {k:?}"));
                continue;
            };
            match Action::from_name(a) {
                Some(action) => self.bind(key, action),
                None if a == "none" || a == "unbind" => {
                    self.map.remove(&key);
                }
                None => problems.push(format!(
                    "{at}: unknown action {a:?} (one of: {})",
                    Action::ALL.map(|(_, n)| n).join(", ")
                )),
            }
        }
        problems
    }
}

/// Where the key config lives: `$XDG_CONFIG_HOME/mltriage/keys.conf`, else
/// `~/.config/mltriage/keys.conf`.
pub fn keys_config_path() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|v| !v.is_empty())
                .map(|h| PathBuf::from(h).join(".config"))
        })?;
    Some(base.join("mltriage").join("keys.conf"))
}

/// The default map plus the user's file when present; problems are returned for the status line.
pub fn load_keymap() -> (Keymap, Vec<String>) {
    let mut km = Keymap::default();
    let mut problems = Vec::new();
    if let Some(p) = keys_config_path() {
        // Regular files only (a FIFO would block the UI), at most 1 MiB.
        match mltriage_probes::limits::read_capped_io(&p, 1 << 20) {
            Ok(bytes) => problems = km.apply_config(&String::from_utf8_lossy(&bytes), &p),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => problems.push(format!("{}: {e}", p.display())),
        }
    }
    (km, problems)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_rebinds_and_reports_bad_lines() {
        let mut km = Keymap::default();
        let p = Path::new("keys.conf");
        let probs = km.apply_config("# c\nx = quit\nctrl-f = search\nzz = quit\ny = fly\n", p);
        assert_eq!(probs.len(), 2, "{probs:?}");
        assert!(probs[0].starts_with("keys.conf:4: unknown key"));
        assert!(probs[1].starts_with("keys.conf:5: unknown action \"fly\""));
        let ev = KeyEvent::new(KeyCode::Char('x'), KeyModifiers::NONE);
        assert_eq!(km.get(&ev), Some(Action::Quit));
        let ev = KeyEvent::new(KeyCode::Char('f'), KeyModifiers::CONTROL);
        assert_eq!(km.get(&ev), Some(Action::Search));
    }
}
