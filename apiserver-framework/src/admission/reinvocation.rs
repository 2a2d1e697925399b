//! [`Reinvocation`]: whether the mutating plugins run a second time, as upstream's
//! `ReinvocationContext`, and what the mutating webhooks and the mutating admission policies
//! each keep of the first round to decide which of theirs to run again
//! (`reinvocationPolicy: IfNeeded`).
//!
//! A mutating webhook or policy that changes the object asks for a second round. In it every
//! mutating plugin runs again, but a webhook (or a policy, with a binding and a parameter) only
//! if its policy is `IfNeeded`, it ran in the first round, and the object changed after it
//! ran (by a later webhook's or policy's change, or by a plugin between the rounds). One not
//! run in the first round does not run in the second; there is no third.

use std::collections::BTreeSet;

use serde_json::Value;

/// The reinvocation state of one admission of a write.
#[derive(Debug, Default)]
pub struct Reinvocation {
    /// This is the second round.
    pub(crate) is_reinvoke: bool,
    /// A plugin asked for a second round.
    pub(crate) should_reinvoke: bool,
    /// What the mutating webhooks ran.
    pub(crate) webhooks: Invocations,
    /// What the mutating admission policies ran (keyed by policy, binding and parameter).
    pub(crate) policies: Invocations,
}

impl Reinvocation {
    /// Whether this is the second round.
    pub fn is_reinvoke(&self) -> bool {
        self.is_reinvoke
    }
}

/// What one plugin ran, by key, to decide what it runs again (upstream's
/// `webhookReinvokeContext` and `policyReinvokeContext`).
#[derive(Debug, Default)]
pub(crate) struct Invocations {
    /// The object as the plugin last left it.
    last_output: Option<Value>,
    /// The `IfNeeded` ones run since the object last changed.
    invoked_since_change: BTreeSet<String>,
    /// The ones to run in the second round.
    reinvoke: BTreeSet<String>,
}

impl Invocations {
    /// The plugin starts its round on `object`: in the second round, a change since it last
    /// ran (by the plugins between) reruns every `IfNeeded` one it ran before.
    pub(crate) fn begin(&mut self, is_reinvoke: bool, object: Option<&Value>) {
        if is_reinvoke && self.last_output.as_ref() != object {
            self.object_changed();
        }
    }

    /// The plugin ends its round, leaving `object`.
    pub(crate) fn end(&mut self, object: Option<&Value>) {
        self.last_output = object.cloned();
    }

    /// The object changed: every `IfNeeded` one run before the change runs again in the
    /// second round.
    pub(crate) fn object_changed(&mut self) {
        let invoked = std::mem::take(&mut self.invoked_since_change);
        self.reinvoke.extend(invoked);
    }

    /// `key`, whose policy is `IfNeeded`, ran.
    pub(crate) fn invoked(&mut self, key: String) {
        self.invoked_since_change.insert(key);
    }

    /// Whether `key` runs again in the second round.
    pub(crate) fn reinvokes(&self, key: &str) -> bool {
        self.reinvoke.contains(key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_reinvokes_the_webhooks_called_before_it() {
        let mut r = Invocations::default();
        r.invoked("a".into());
        r.object_changed();
        r.invoked("c".into());
        assert!(r.reinvokes("a"));
        assert!(!r.reinvokes("c"), "called after the change");
        // A plugin between the rounds changed the object: "c" runs again too.
        let object = serde_json::json!({"a": 1});
        r.end(Some(&object));
        r.begin(true, Some(&serde_json::json!({"a": 2})));
        assert!(r.reinvokes("c"));
    }
}
