//! The HTML page of a report and of a diff: one self-contained file (no network).

use crate::model::{DiffReport, Report};

fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

fn page(title: &str, body: &str) -> String {
    format!("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{}</title></head>\n<body><h1>{}</h1>\n<pre>{}</pre>\n</body></html>\n", escape(title), escape(title), escape(body))
}

/// The page of one report.
pub fn render_report(r: &Report) -> String {
    page(&format!("heap report: {}", r.meta.trace), &crate::text::render(r, 20))
}

/// The page of a diff.
pub fn render_diff(d: &DiffReport) -> String {
    page(&format!("heap diff: {} → {}", d.before.trace, d.after.trace), &crate::text::render_diff(d, 20))
}
