//! `MutatingAdmissionWebhook` and `ValidatingAdmissionWebhook`: the host cluster's
//! `admissionregistration.k8s.io/v1` webhook configurations applied to this server's writes
//! (upstream's `pkg/admission/plugin/webhook`).
//!
//! Configurations run in name order, webhooks in their order inside one. A webhook is called
//! when one of its `rules` and both selectors match; its `matchPolicy` (default `Equivalent`)
//! decides whether a rule naming another version of the resource matches, the webhook then
//! getting the objects in that version ([`versions`]); its `failurePolicy` (default `Fail`)
//! decides what a failed call means; `sideEffects` other than `None`/`NoneOnDryRun` refuse dry
//! runs. A mutating webhook whose `reinvocationPolicy` is `IfNeeded` is called again when a
//! later one changed the object (see [`Reinvocation`](crate::admission::Reinvocation)). Its
//! `matchConditions` (CEL) must all hold for it to be called ([`conditions`]).

pub(crate) mod client;
pub(crate) mod conditions;
pub(crate) mod matching;
pub(crate) mod review;
pub(crate) mod versions;

use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::admissionregistration::v1 as reg;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use tracing::Instrument;

use crate::admission::host::{HostObjects, wait_synced};
use crate::admission::lifecycle::namespace_not_found;
use crate::admission::metrics::{self, RejectionType};
use crate::admission::{AdmissionAttributes, AdmissionPlugin, Phases};
use crate::cel::authorizer::evaluate_with_checks;
use crate::error::ApiError;
use crate::host_cluster::resolver::ServiceResolver;
use crate::resource::ResourceInfo;
use crate::storage::traced::TRACE_TARGET;
use conditions::Matched;
use versions::{MatchPolicy, Versioned};

/// The name of the mutating webhook plugin.
pub const MUTATING_NAME: &str = "MutatingAdmissionWebhook";
/// The name of the validating webhook plugin.
pub const VALIDATING_NAME: &str = "ValidatingAdmissionWebhook";

/// The fields of a mutating or validating webhook that calling it needs.
struct Hook {
    /// The webhook's configuration, name and place in it, which tell it apart.
    uid: String,
    name: String,
    /// `reinvocationPolicy: IfNeeded` (mutating webhooks).
    reinvoke_if_needed: bool,
    client_config: reg::WebhookClientConfig,
    rules: Vec<reg::RuleWithOperations>,
    match_policy: MatchPolicy,
    namespace_selector: Option<LabelSelector>,
    object_selector: Option<LabelSelector>,
    /// `matchConditions`: (name, CEL expression).
    match_conditions: Vec<(String, String)>,
    side_effects: String,
    timeout: Duration,
    ignore_failures: bool,
}

impl Hook {
    /// The name of the configuration declaring this webhook (the start of its uid).
    fn configuration(&self) -> &str {
        self.uid.split('/').next().unwrap_or_default()
    }

    #[allow(clippy::too_many_arguments)]
    fn new(
        name: &str,
        client_config: &reg::WebhookClientConfig,
        rules: &Option<Vec<reg::RuleWithOperations>>,
        match_policy: Option<&str>,
        namespace_selector: &Option<LabelSelector>,
        object_selector: &Option<LabelSelector>,
        side_effects: &str,
        timeout_seconds: Option<i32>,
        failure_policy: Option<&str>,
    ) -> Self {
        Hook {
            uid: String::new(),
            name: name.to_string(),
            reinvoke_if_needed: false,
            client_config: client_config.clone(),
            rules: rules.clone().unwrap_or_default(),
            match_policy: MatchPolicy::of(match_policy),
            namespace_selector: namespace_selector.clone(),
            object_selector: object_selector.clone(),
            match_conditions: Vec::new(),
            side_effects: side_effects.to_string(),
            timeout: Duration::from_secs(timeout_seconds.unwrap_or(10).clamp(1, 30) as u64),
            ignore_failures: failure_policy == Some("Ignore"),
        }
    }
}

/// The hooks of the host's configurations of one kind, by configuration name. Mutating and
/// validating webhooks have these fields alike but are distinct types.
macro_rules! hooks_of {
    ($configs:expr, $reinvoke_if_needed:expr) => {{
        let mut configs = $configs;
        configs.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
        configs
            .iter()
            .flat_map(|c| {
                let config = c.metadata.name.as_deref().unwrap_or_default();
                c.webhooks
                    .iter()
                    .flatten()
                    .enumerate()
                    .map(move |(i, w)| (config, i, w))
            })
            .map(|(config, i, w)| Hook {
                uid: format!("{config}/{}/{i}", w.name),
                reinvoke_if_needed: $reinvoke_if_needed(w),
                match_conditions: w
                    .match_conditions
                    .iter()
                    .flatten()
                    .map(|c| (c.name.clone(), c.expression.clone()))
                    .collect(),
                ..Hook::new(
                    &w.name,
                    &w.client_config,
                    &w.rules,
                    w.match_policy.as_deref(),
                    &w.namespace_selector,
                    &w.object_selector,
                    &w.side_effects,
                    w.timeout_seconds,
                    w.failure_policy.as_deref(),
                )
            })
            .collect()
    }};
}

fn mutating_hooks(host: &HostObjects) -> Vec<Hook> {
    hooks_of!(host.mutating.state(), |w: &reg::MutatingWebhook| {
        w.reinvocation_policy.as_deref() == Some("IfNeeded")
    })
}

fn validating_hooks(host: &HostObjects) -> Vec<Hook> {
    hooks_of!(host.validating.state(), |_: &reg::ValidatingWebhook| false)
}

/// What both plugins share: the host's objects and how services are reached.
struct Dispatcher {
    host: HostObjects,
    resolver: Arc<dyn ServiceResolver>,
    /// The `matchConditions` expressions, compiled once.
    programs: conditions::Programs,
}

impl Dispatcher {
    /// The version of the request's resource `hook` is called in, or `None` when it does not
    /// want the request (an error refuses it).
    async fn should_call<'a>(
        &self,
        hook: &Hook,
        attrs: &AdmissionAttributes<'a>,
    ) -> Result<Option<&'a ResourceInfo>, ApiError> {
        let Some(version) = versions::matching_version(&hook.rules, hook.match_policy, attrs)
        else {
            return Ok(None);
        };
        let namespace = attrs.namespace.unwrap_or_default();
        let is_namespace = attrs.resource.group.is_empty() && attrs.resource.plural == "namespaces";
        if !namespace.is_empty()
            && !is_namespace
            && !matching::selector_is_empty(&hook.namespace_selector)
            && let Some(selector) = &hook.namespace_selector
        {
            let Some(ns) = self.host.namespace(namespace).await? else {
                return Err(namespace_not_found(namespace));
            };
            let labels = ns.metadata.labels.unwrap_or_default();
            if !matching::selector_matches(selector, &labels).map_err(ApiError::internal)? {
                return Ok(None);
            }
        }
        if !matching::object_selected(&hook.object_selector, attrs)? {
            return Ok(None);
        }
        if attrs.dry_run && !matches!(hook.side_effects.as_str(), "None" | "NoneOnDryRun") {
            return Err(ApiError::bad_request(format!(
                "admission webhook {:?} does not support dry run",
                hook.name
            )));
        }
        Ok(Some(version))
    }

    /// Calls `hook` with the request's objects in the version it is called in, unless its
    /// match conditions skip it; `Ok(None)` when skipped, or when the call failed and the
    /// hook's failures are ignored.
    async fn call(
        &self,
        hook: &Hook,
        attrs: &AdmissionAttributes<'_>,
        versioned: &Versioned<'_>,
        mutating: bool,
    ) -> Result<Option<review::Verdict>, ApiError> {
        let uid = uuid::Uuid::new_v4().to_string();
        let review = review::request(attrs, versioned, &uid);
        let admission = metrics::global();
        let kind = if mutating { "admit" } else { "validating" };
        let operation = attrs.operation.as_str();
        let started = Instant::now();
        let matched =
            evaluate_with_checks(&attrs.checks(), attrs.authorizer, attrs.user, |checks| {
                conditions::evaluate(&self.programs, &hook.match_conditions, &review, checks)
            })
            .await;
        if !hook.match_conditions.is_empty() {
            admission.observe_match_conditions(
                &hook.name,
                kind,
                operation,
                matches!(matched, Matched::No { .. }),
                matches!(matched, Matched::Error(_)),
                started.elapsed(),
            );
        }
        match matched {
            Matched::Yes => {}
            Matched::No { .. } => return Ok(None),
            Matched::Error(e) if hook.ignore_failures => {
                tracing::warn!(
                    "admission: failed evaluating match conditions of webhook {:?}, skipping it (failurePolicy Ignore): {e}",
                    hook.name
                );
                admission.observe_fail_open(&hook.name, kind);
                return Ok(None);
            }
            Matched::Error(e) => {
                tracing::warn!(
                    "Failed evaluating match conditions, failing closed {}: {e}",
                    hook.name
                );
                admission.observe_rejection(
                    &hook.name,
                    kind,
                    operation,
                    RejectionType::Internal,
                    0,
                );
                return Err(attrs.forbidden(&e));
            }
        }
        let body = review.to_string().into_bytes();
        // Upstream's span of a webhook call, with its attributes.
        let span = tracing::trace_span!(
            target: TRACE_TARGET,
            "webhook",
            otel.name = if mutating { "Call mutating webhook" } else { "Call validating webhook" },
            otel.kind = "internal",
            otel.status_code = tracing::field::Empty,
            configuration = hook.configuration(),
            webhook = hook.name.as_str(),
            resource = %format_args!("{}/{}, Resource={}", attrs.resource.group, attrs.resource.version, attrs.resource.plural),
            subresource = attrs.subresource.unwrap_or(""),
            operation,
            UID = uid.as_str(),
        );
        let started = Instant::now();
        let called = client::post(&hook.client_config, &*self.resolver, hook.timeout, body)
            .instrument(span.clone())
            .await;
        let elapsed = started.elapsed();
        attrs.notes.add_webhook_time(elapsed);
        let answered = called.is_ok();
        let result = called.and_then(|body| {
            review::verdict(&body, &uid, mutating)
                .map_err(|e| format!("received invalid webhook response: {e}"))
        });
        if result.is_err() {
            span.record("otel.status_code", "error");
        }
        // As upstream: an allowing answer is 200, a refusal its status's code, a failed call
        // 0; rejected unless allowed or the failure is ignored.
        let (code, rejected) = match &result {
            Ok(v) if v.allowed => (200, false),
            Ok(v) => (review::denial_code(&v.status), true),
            Err(_) => (0, !hook.ignore_failures),
        };
        admission.observe_webhook(&hook.name, kind, operation, code, rejected, elapsed);
        match result {
            Ok(verdict) => {
                if !verdict.allowed {
                    admission.observe_rejection(
                        &hook.name,
                        kind,
                        operation,
                        RejectionType::Denied,
                        code,
                    );
                }
                // As upstream, recorded whether the webhook allows the request or not.
                for (key, value) in &verdict.audit_annotations {
                    let key = format!("{}/{key}", hook.name);
                    if let Err(e) = attrs.notes.add_annotation(&key, value) {
                        tracing::warn!(
                            "failed to set admission audit annotation {key} to {value} for webhook {}: {e}",
                            hook.name
                        );
                    }
                }
                for warning in &verdict.warnings {
                    attrs.notes.add_warning(warning);
                }
                Ok(Some(verdict))
            }
            Err(reason) => {
                let err = format!("failed calling webhook {:?}: {reason}", hook.name);
                if hook.ignore_failures {
                    tracing::warn!("admission: {err} (failurePolicy Ignore)");
                    admission.observe_fail_open(&hook.name, kind);
                    Ok(None)
                } else {
                    let why = if answered {
                        RejectionType::Internal
                    } else {
                        RejectionType::CallingWebhook
                    };
                    admission.observe_rejection(&hook.name, kind, operation, why, 0);
                    Err(ApiError::internal(err))
                }
            }
        }
    }
}

/// Applies a mutating webhook's JSON patch to the object in the webhook's version; a patch of a
/// request without an object (a delete) is upstream's 500.
fn apply_patch(
    name: &str,
    versioned: &mut Versioned<'_>,
    patch: &json_patch::Patch,
) -> Result<(), ApiError> {
    let Some(object) = versioned.object.as_mut() else {
        return Err(ApiError::internal(format!(
            "admission webhook {name:?} attempted to modify the object, which is not supported for this operation"
        )));
    };
    json_patch::patch(object, patch)
        .map_err(|e| ApiError::internal(format!("failed calling webhook {name:?}: JSONPatch: {e}")))
}

/// Calls the host's mutating webhooks and applies their JSON patches.
pub struct MutatingAdmissionWebhook(Dispatcher);

impl MutatingAdmissionWebhook {
    /// The plugin reading configurations from `host`, reaching services through `resolver`.
    pub fn new(host: HostObjects, resolver: Arc<dyn ServiceResolver>) -> Self {
        MutatingAdmissionWebhook(Dispatcher {
            host,
            resolver,
            programs: conditions::Programs::default(),
        })
    }
}

#[async_trait::async_trait]
impl AdmissionPlugin for MutatingAdmissionWebhook {
    fn name(&self) -> &str {
        MUTATING_NAME
    }

    fn phases(&self) -> Phases {
        Phases::Mutate
    }

    async fn mutate(&self, attrs: &mut AdmissionAttributes<'_>) -> Result<(), ApiError> {
        let d = &self.0;
        wait_synced(&d.host.mutating, attrs).await?;
        let hooks = mutating_hooks(&d.host);
        if hooks.is_empty() {
            return Ok(());
        }
        // Plugins that ran again changed the object since the webhooks last saw it.
        let reinvoking = attrs.reinvocation.is_reinvoke;
        let object = attrs.object.as_deref();
        attrs.reinvocation.webhooks.begin(reinvoking, object);
        let result = self.call_hooks(hooks, attrs, reinvoking).await;
        let object = attrs.object.as_deref();
        attrs.reinvocation.webhooks.end(object);
        result
    }
}

impl MutatingAdmissionWebhook {
    /// Calls `hooks` in turn (in the second round only those to be called again), applying
    /// their patches.
    async fn call_hooks(
        &self,
        hooks: Vec<Hook>,
        attrs: &mut AdmissionAttributes<'_>,
        reinvoking: bool,
    ) -> Result<(), ApiError> {
        let d = &self.0;
        // The objects in the version of the webhook last called: the next webhook of that
        // version gets them as that one's patch left them, as upstream's `VersionedAttributes`;
        // the store's object is kept in step after every patch.
        let mut last: Option<Versioned<'_>> = None;
        for hook in hooks {
            let Some(version) = d.should_call(&hook, attrs).await? else {
                continue;
            };
            if reinvoking && !attrs.reinvocation.webhooks.reinvokes(&hook.uid) {
                continue;
            }
            let mut versioned = match last.take() {
                Some(v) if v.resource.version == version.version => v,
                _ => Versioned::new(attrs, version)?,
            };
            let verdict = d.call(&hook, attrs, &versioned, true).await?;
            if let Some(verdict) = verdict {
                if !verdict.allowed {
                    return Err(review::denied(&hook.name, &verdict.status));
                }
                if let Some(patch) = verdict.patch.filter(|p| !p.0.is_empty()) {
                    apply_patch(&hook.name, &mut versioned, &patch)?;
                    let stored = versioned.stored_object(attrs)?;
                    if let (Some(object), Some(stored)) = (attrs.object.as_deref_mut(), stored)
                        && *object != stored
                    {
                        *object = stored;
                        attrs.reinvocation.webhooks.object_changed();
                        attrs.reinvocation.should_reinvoke = true;
                    }
                }
            }
            if hook.reinvoke_if_needed {
                attrs.reinvocation.webhooks.invoked(hook.uid);
            }
            last = Some(versioned);
        }
        Ok(())
    }
}

/// Calls the host's validating webhooks.
pub struct ValidatingAdmissionWebhook(Dispatcher);

impl ValidatingAdmissionWebhook {
    /// The plugin reading configurations from `host`, reaching services through `resolver`.
    pub fn new(host: HostObjects, resolver: Arc<dyn ServiceResolver>) -> Self {
        ValidatingAdmissionWebhook(Dispatcher {
            host,
            resolver,
            programs: conditions::Programs::default(),
        })
    }
}

#[async_trait::async_trait]
impl AdmissionPlugin for ValidatingAdmissionWebhook {
    fn name(&self) -> &str {
        VALIDATING_NAME
    }

    fn phases(&self) -> Phases {
        Phases::Validate
    }

    async fn validate(&self, attrs: &AdmissionAttributes<'_>) -> Result<(), ApiError> {
        let d = &self.0;
        wait_synced(&d.host.validating, attrs).await?;
        // The objects in each version a webhook was called in, converted once.
        let mut converted: Vec<Versioned<'_>> = Vec::new();
        for hook in validating_hooks(&d.host) {
            let Some(version) = d.should_call(&hook, attrs).await? else {
                continue;
            };
            let at = match converted
                .iter()
                .position(|v| v.resource.version == version.version)
            {
                Some(at) => at,
                None => {
                    converted.push(Versioned::new(attrs, version)?);
                    converted.len() - 1
                }
            };
            if let Some(verdict) = d.call(&hook, attrs, &converted[at], false).await?
                && !verdict.allowed
            {
                return Err(review::denied(&hook.name, &verdict.status));
            }
        }
        Ok(())
    }
}
