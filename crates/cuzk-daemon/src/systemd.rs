//! systemd integration for `Type=notify`: readiness, status lines and stopping, sent to
//! `$NOTIFY_SOCKET` (the `sd-notify` crate; without the variable every call does nothing,
//! so the daemon runs the same outside systemd).
//!
//! READY=1 is sent only once the gRPC socket is bound and every configured preload has been
//! tried: `systemctl start` (and units ordered after cuzk, such as Curio) then wait until
//! the parameters are resident instead of the first proof paying minutes of loading.

use sd_notify::NotifyState;

fn send(states: &[NotifyState]) {
    // A lost notification is not worth failing over; systemd's start timeout covers it.
    if let Err(e) = sd_notify::notify(states) {
        tracing::warn!(error = %e, "could not notify systemd");
    }
}

/// A free-form line `systemctl status cuzk` shows.
pub fn status(line: &str) {
    send(&[NotifyState::Status(line)]);
}

/// Serving, with the preloads done (`failed` of `total` did not load).
pub fn ready(total: usize, failed: usize) {
    let line = match (total, failed) {
        (0, _) => "serving (no preloads configured)".to_string(),
        (t, 0) => format!("serving; {t} preloaded circuit(s) resident"),
        (t, f) => format!("serving; {f} of {t} preloads FAILED (see the log; loaded on first use instead)"),
    };
    tracing::info!(%line, "ready");
    send(&[NotifyState::Ready, NotifyState::Status(&line)]);
}

/// Shutting down: systemd then waits up to `TimeoutStopSec` before SIGKILL.
pub fn stopping(grace_secs: u64) {
    let line = format!("stopping: running jobs get up to {grace_secs} s");
    send(&[NotifyState::Stopping, NotifyState::Status(&line)]);
}
