//! How the TUI speaks and looks: every user-facing string ([`strings`]) and the theme
//! ([`theme`]: styles and marks). Neutral ground below both the state (`crate::app`: status
//! messages, the chosen theme) and the view (`crate::ui`); it imports neither.

pub mod numbers;
pub mod strings;
pub mod theme;
