//! [`Reinvocation`]: whether the mutating plugins run a second time, as upstream's
//! `ReinvocationContext`, and what the mutating webhooks keep of the first round to decide
//! which of them to call again (`reinvocationPolicy: IfNeeded`).
//!
//! A mutating webhook whose patch changes the object asks for a second round. In it every
//! mutating plugin runs again, but a webhook only if its policy is `IfNeeded`, it was called in
//! the first round, and the object changed after that call (by a later webhook's patch, or by
//! a plugin between the rounds). A webhook not called in the first round is not called in the
//! second; there is no third.

use std::collections::BTreeSet;

use serde_json::Value;

/// The reinvocation state of one admission of a write.
#[derive(Debug, Default)]
pub struct Reinvocation {
    /// This is the second round.
    pub(crate) is_reinvoke: bool,
    /// A plugin asked for a second round.
    pub(crate) should_reinvoke: bool,
    /// The object as the mutating webhooks last left it.
    pub(crate) last_webhook_output: Option<Value>,
    /// The `IfNeeded` webhooks called since the object last changed.
    pub(crate) invoked_since_change: BTreeSet<String>,
    /// The webhooks to call in the second round.
    pub(crate) reinvoke_webhooks: BTreeSet<String>,
}

impl Reinvocation {
    /// Whether this is the second round.
    pub fn is_reinvoke(&self) -> bool {
        self.is_reinvoke
    }

    /// The object changed: every `IfNeeded` webhook called before the change is called again
    /// in the second round.
    pub(crate) fn object_changed(&mut self) {
        let invoked = std::mem::take(&mut self.invoked_since_change);
        self.reinvoke_webhooks.extend(invoked);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_reinvokes_the_webhooks_called_before_it() {
        let mut r = Reinvocation::default();
        r.invoked_since_change.insert("a".into());
        r.object_changed();
        r.invoked_since_change.insert("c".into());
        assert!(r.reinvoke_webhooks.contains("a"));
        assert!(
            !r.reinvoke_webhooks.contains("c"),
            "called after the change"
        );
    }
}
