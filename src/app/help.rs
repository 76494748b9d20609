//! The `?` overlay's keys: typing filters the key list; Esc, Enter or `?` closes it.

use crossterm::event::KeyCode;

use super::{App, Overlay};

impl App {
    /// A key while the `?` overlay is open: it filters the list; Esc, Enter or `?` closes it.
    pub(super) fn help_key(&mut self, code: KeyCode, plain_char: Option<char>) {
        let Overlay::Help { filter } = &mut self.overlay else {
            return;
        };
        match code {
            KeyCode::Esc | KeyCode::Enter => self.overlay = Overlay::None,
            KeyCode::Char('?') if filter.is_empty() => self.overlay = Overlay::None,
            KeyCode::Backspace => {
                filter.pop();
            }
            _ => {
                if let Some(c) = plain_char {
                    filter.push(c);
                }
            }
        }
    }
}
