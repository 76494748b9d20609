//! The `:` command palette: a command line at the bottom with completions above it
//! (`walk TREE`, `show ID`, `search …`, `export md|json [PATH]`, `fact k=v`, `quit`).

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph, Widget};

use super::{pane, strings as S};
use crate::app::{palette_completions, App};

pub fn render(app: &App, input: &str, sel: usize, area: Rect, buf: &mut Buffer) {
    let t = &app.theme;
    let comps = palette_completions(&app.cat, input);
    let list_h = (comps.len() as u16)
        .min(area.height.saturating_sub(3) / 2)
        .min(8);
    let h = list_h + 3;
    let r = Rect::new(
        area.x,
        area.bottom().saturating_sub(h),
        area.width,
        h.min(area.height),
    );
    Clear.render(r, buf);
    let block = pane(
        app,
        format!("{} (Tab completes, Enter runs, Esc closes)", S::PALETTE),
        true,
    );
    let inner = block.inner(r);
    block.render(r, buf);
    let sel = sel.min(comps.len().saturating_sub(1));
    let mut lines: Vec<Line> = comps
        .iter()
        .take(list_h as usize)
        .enumerate()
        .map(|(i, c)| {
            let l = Line::from(vec![
                Span::raw(if i == sel { t.pointer() } else { " " }),
                Span::styled(c.clone(), t.dim()),
            ]);
            if i == sel {
                l.style(t.selected())
            } else {
                l
            }
        })
        .collect();
    lines.push(Line::from(vec![
        Span::styled(":", t.key()),
        Span::raw(input.to_string()),
        Span::styled("_", t.selected()),
    ]));
    Paragraph::new(lines).render(inner, buf);
}
