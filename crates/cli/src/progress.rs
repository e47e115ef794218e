//! Progress bars (indicatif) on standard error, drawn only when standard error is a
//! terminal: in pipes, logs and tests they are hidden and print nothing.

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

fn target() -> ProgressDrawTarget {
    if std::io::stderr().is_terminal() {
        ProgressDrawTarget::stderr()
    } else {
        ProgressDrawTarget::hidden()
    }
}

fn style(template: &str) -> ProgressStyle {
    ProgressStyle::with_template(template).unwrap_or_else(|_| ProgressStyle::default_bar())
}

/// A bar counting bytes of input; `total` is the input size when known (a file), `None`
/// for a stream (standard input), which gets a spinner instead.
pub fn bytes(total: Option<u64>, message: &str) -> ProgressBar {
    let bar = match total {
        Some(len) => ProgressBar::with_draw_target(Some(len), target()).with_style(style(
            "{msg} [{wide_bar}] {bytes}/{total_bytes} ({binary_bytes_per_sec}, {eta} left)",
        )),
        None => ProgressBar::with_draw_target(None, target())
            .with_style(style("{spinner} {msg} {bytes} ({binary_bytes_per_sec})")),
    };
    bar.with_message(message.to_string())
}

/// A bar counting items (entries) out of `total`.
pub fn items(total: u64, message: &str) -> ProgressBar {
    ProgressBar::with_draw_target(Some(total), target())
        .with_style(style(
            "{msg} [{wide_bar}] {human_pos}/{human_len} ({per_sec}, {eta} left)",
        ))
        .with_message(message.to_string())
}
