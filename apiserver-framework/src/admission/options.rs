//! `--enable-admission-plugins` and `--disable-admission-plugins`, with upstream's semantics
//! (`k8s.io/apiserver/pkg/server/options/admission.go`): the plugins run in their registered
//! order; default-on plugins run unless disabled, default-off ones only when enabled; an
//! unknown name or a name in both lists fails the start.

use std::collections::BTreeSet;
use std::sync::Arc;

use crate::admission::AdmissionPlugin;

/// The names of the plugins a production server adds in front of the application's own, in
/// upstream's recommended order.
pub const HOST_PLUGINS: [&str; 5] = [
    crate::admission::lifecycle::NAME,
    crate::admission::policy::mutating::MUTATING_POLICY_NAME,
    crate::admission::webhook::MUTATING_NAME,
    crate::admission::policy::VALIDATING_POLICY_NAME,
    crate::admission::webhook::VALIDATING_NAME,
];

/// The admission flags.
#[derive(Clone, Debug, Default, clap::Args)]
pub struct AdmissionOptions {
    /// Admission plugins that should be enabled in addition to default enabled ones
    /// (NamespaceLifecycle, MutatingAdmissionWebhook, ValidatingAdmissionPolicy,
    /// ValidatingAdmissionWebhook and the server's own plugins). Comma-delimited list of admission plugins. The order of plugins
    /// in this flag does not matter.
    #[arg(long, value_delimiter = ',')]
    pub enable_admission_plugins: Vec<String>,
    /// Admission plugins that should be disabled although they are in the default enabled
    /// plugins list. Comma-delimited list of admission plugins. The order of plugins in this
    /// flag does not matter.
    #[arg(long, value_delimiter = ',')]
    pub disable_admission_plugins: Vec<String>,
}

/// Errors of the admission flags, with upstream's messages.
#[derive(Debug, thiserror::Error)]
#[error("{}", .0.join(", "))]
pub struct AdmissionOptionsError(pub Vec<String>);

impl AdmissionOptions {
    /// The plugins of `registered` these flags leave enabled, in registration order. `known`
    /// names further plugins that are registered but absent here (e.g. the host plugins of a
    /// server without a host cluster): the flags may name them.
    pub fn select(
        &self,
        registered: Vec<Arc<dyn AdmissionPlugin>>,
        known: &[&str],
    ) -> Result<Vec<Arc<dyn AdmissionPlugin>>, AdmissionOptionsError> {
        let names: BTreeSet<&str> = registered
            .iter()
            .map(|p| p.name())
            .chain(known.iter().copied())
            .collect();
        let mut errs = Vec::new();
        for (flag, list) in [
            ("enable-admission-plugins", &self.enable_admission_plugins),
            ("disable-admission-plugins", &self.disable_admission_plugins),
        ] {
            for name in list {
                if !names.contains(name.as_str()) {
                    errs.push(format!("{flag} plugin {name:?} is unknown"));
                }
            }
        }
        let enable: BTreeSet<&str> = self
            .enable_admission_plugins
            .iter()
            .map(String::as_str)
            .collect();
        let disable: BTreeSet<&str> = self
            .disable_admission_plugins
            .iter()
            .map(String::as_str)
            .collect();
        let both: Vec<&str> = enable.intersection(&disable).copied().collect();
        if !both.is_empty() {
            errs.push(format!(
                "[{}] in enable-admission-plugins and disable-admission-plugins overlapped",
                both.join(" ")
            ));
        }
        if !errs.is_empty() {
            return Err(AdmissionOptionsError(errs));
        }
        Ok(registered
            .into_iter()
            .filter(|p| {
                let name = p.name();
                enable.contains(name) || (p.enabled_by_default() && !disable.contains(name))
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Named(&'static str, bool);

    #[async_trait::async_trait]
    impl AdmissionPlugin for Named {
        fn name(&self) -> &str {
            self.0
        }
        fn enabled_by_default(&self) -> bool {
            self.1
        }
    }

    fn plugins() -> Vec<Arc<dyn AdmissionPlugin>> {
        vec![
            Arc::new(Named("A", true)),
            Arc::new(Named("B", false)),
            Arc::new(Named("C", true)),
        ]
    }

    fn names(p: &[Arc<dyn AdmissionPlugin>]) -> Vec<&str> {
        p.iter().map(|p| p.name()).collect()
    }

    fn opts(enable: &[&str], disable: &[&str]) -> AdmissionOptions {
        AdmissionOptions {
            enable_admission_plugins: enable.iter().map(|s| s.to_string()).collect(),
            disable_admission_plugins: disable.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn defaults_enable_and_disable_keep_registration_order() {
        let o = opts(&[], &[]);
        assert_eq!(names(&o.select(plugins(), &[]).unwrap()), ["A", "C"]);
        let o = opts(&["B"], &["A", "X"]);
        assert_eq!(names(&o.select(plugins(), &["X"]).unwrap()), ["B", "C"]);
    }

    #[test]
    fn unknown_and_overlapping_names_fail_with_upstream_messages() {
        let e = opts(&["Nope", "A"], &["A", "Gone"])
            .select(plugins(), &[])
            .err()
            .unwrap();
        assert_eq!(
            e.0,
            [
                "enable-admission-plugins plugin \"Nope\" is unknown",
                "disable-admission-plugins plugin \"Gone\" is unknown",
                "[A] in enable-admission-plugins and disable-admission-plugins overlapped",
            ]
        );
    }
}
