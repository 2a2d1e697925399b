//! The self reviews a cluster answers every user about themselves, as kube-apiserver does:
//!
//! - `SelfSubjectReview` (`authentication.k8s.io` `v1`, and `v1beta1` for kubectl 1.27):
//!   who am I (`kubectl auth whoami`);
//! - `SelfSubjectAccessReview` (`authorization.k8s.io/v1`): may I do this
//!   (`kubectl auth can-i`), decided by the server's authorizer;
//! - `SelfSubjectRulesReview` (`authorization.k8s.io/v1`): what may I do in a namespace
//!   (`kubectl auth can-i --list`), as far as a [`RulesResolver`] knows.
//!
//! All three are create-only, computed from the caller and never stored; their create bodies
//! are accepted in JSON, YAML and (as kubectl 1.32 and later sends them) protobuf. [`BasicUser`] lets every
//! authenticated user create them, as upstream's `system:basic-user` role does.

use std::sync::Arc;

use bytes::Bytes;
use k8s_openapi::api::authentication::v1 as authn;
use k8s_openapi::api::authorization::v1 as authz;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::authz::{
    Attributes, AuthorizationError, Authorizer, Decision, NonResourceAttributes, Request,
    ResourceAttributes, SelectorRequirement,
};
use crate::devhost::protobuf;
use crate::error::{ApiError, FieldError};
use crate::registry::rest::options::WriteOptions;
use crate::registry::rest::{ProtobufDecoder, RequestContext, RestStorage};
use crate::resource::{ResourceInfo, Scope};
use crate::schema::{object_schema, structural_schema_of};
use crate::user::UserInfo;

/// `authentication.k8s.io`.
pub(crate) const AUTHENTICATION_GROUP: &str = "authentication.k8s.io";
/// `authorization.k8s.io`.
pub(crate) const AUTHORIZATION_GROUP: &str = "authorization.k8s.io";
/// The versions of `selfsubjectreviews` served: kubectl 1.28 and later ask for `v1` first,
/// kubectl 1.27 for `v1beta1` (then `v1alpha1`).
pub(crate) const SELF_SUBJECT_REVIEW_VERSIONS: [&str; 2] = ["v1", "v1beta1"];

fn review_info(group: &str, version: &str, kind: &str, schema: Value) -> ResourceInfo {
    ResourceInfo {
        group: group.into(),
        version: version.into(),
        kind: kind.into(),
        plural: format!("{}s", kind.to_lowercase()),
        singular: kind.to_lowercase(),
        scope: Scope::Cluster,
        short_names: Vec::new(),
        categories: Vec::new(),
        status_subresource: false,
        printer_columns: Vec::new(),
        selectable_fields: Vec::new(),
        scale: None,
        schema: Arc::new(schema),
    }
}

/// Decodes `body[field]` (absent or `null`: the type's default) as upstream decodes a request
/// body: a value of the wrong type is a 400.
fn decode<T: DeserializeOwned + Default>(body: &Value, field: &str) -> Result<T, ApiError> {
    match body.get(field) {
        None | Some(Value::Null) => Ok(T::default()),
        Some(v) => T::deserialize(v).map_err(|e| {
            ApiError::bad_request(format!("the request body's {field} does not decode: {e}"))
        }),
    }
}

/// The answer: the review with its status (and `spec`, when the kind has one).
fn answer(
    info: &ResourceInfo,
    metadata: Value,
    spec: Option<Value>,
    status: Value,
) -> Result<Bytes, ApiError> {
    let mut obj = json!({
        "kind": info.kind,
        "apiVersion": info.api_version(),
        "metadata": metadata,
    });
    if let Some(spec) = spec {
        obj["spec"] = spec;
    }
    obj["status"] = status;
    serde_json::to_vec(&obj)
        .map(Bytes::from)
        .map_err(ApiError::internal)
}

fn to_json(v: &impl serde::Serialize) -> Result<Value, ApiError> {
    serde_json::to_value(v).map_err(ApiError::internal)
}

/// The metadata of an answer built from scratch (Go's zero `ObjectMeta`).
fn empty_metadata() -> Value {
    json!({"creationTimestamp": null})
}

/// The [`RestStorage`] of a review type: create only (answered by the type's `review`), with
/// protobuf bodies decoded by `$decoder`.
macro_rules! review_storage {
    ($ty:ty, $decoder:path) => {
        #[async_trait::async_trait]
        impl RestStorage for $ty {
            fn info(&self) -> &ResourceInfo {
                &self.info
            }

            fn protobuf_decoder(&self) -> Option<ProtobufDecoder> {
                Some($decoder)
            }

            fn verbs(&self) -> Vec<&'static str> {
                vec!["create"]
            }

            async fn create(
                &self,
                ctx: &RequestContext,
                body: Value,
                _opts: &WriteOptions,
            ) -> Result<Bytes, ApiError> {
                self.review(ctx, body).await
            }
        }
    };
}

// ---------------------------------------------------------------------------------------------
// SelfSubjectReview

/// `selfsubjectreviews` of `authentication.k8s.io` (one per served version): answers the
/// caller's user name, uid, groups and extra attributes.
pub(crate) struct SelfSubjectReviews {
    info: ResourceInfo,
}

impl SelfSubjectReviews {
    /// The resource in `version` (`v1` or `v1beta1`; both have the same shape).
    pub fn new(version: &str) -> Self {
        let status = structural_schema_of::<authn::SelfSubjectReviewStatus>();
        let mut schema = object_schema(
            "SelfSubjectReview contains the user information that the server has about the user making this request.",
            json!({}),
            Some(status),
            true,
        );
        if let Some(p) = schema["properties"].as_object_mut() {
            p.remove("spec");
        }
        SelfSubjectReviews {
            info: review_info(AUTHENTICATION_GROUP, version, "SelfSubjectReview", schema),
        }
    }
}

fn user_info(u: &UserInfo) -> authn::UserInfo {
    let some_str = |s: &str| (!s.is_empty()).then(|| s.to_string());
    authn::UserInfo {
        username: some_str(&u.username),
        uid: some_str(&u.uid),
        groups: (!u.groups.is_empty()).then(|| u.groups.clone()),
        extra: (!u.extra.is_empty()).then(|| u.extra.clone()),
    }
}

review_storage!(SelfSubjectReviews, protobuf::self_subject_review);

impl SelfSubjectReviews {
    /// Answers a create of a review with this body.
    async fn review(&self, ctx: &RequestContext, _body: Value) -> Result<Bytes, ApiError> {
        let now = jiff::Timestamp::now();
        let now = now
            .round(
                jiff::TimestampRound::new()
                    .smallest(jiff::Unit::Second)
                    .mode(jiff::RoundMode::Trunc),
            )
            .unwrap_or(now);
        let status = authn::SelfSubjectReviewStatus {
            user_info: Some(user_info(&ctx.user)),
        };
        answer(
            &self.info,
            json!({"creationTimestamp": to_json(&Time(now))?}),
            None,
            to_json(&status)?,
        )
    }
}

// ---------------------------------------------------------------------------------------------
// SelfSubjectAccessReview

/// `selfsubjectaccessreviews` of `authorization.k8s.io/v1`: asks the server's authorizer
/// whether the caller may do what the spec describes.
pub(crate) struct SelfSubjectAccessReviews {
    info: ResourceInfo,
    authorizer: Arc<dyn Authorizer>,
}

impl SelfSubjectAccessReviews {
    /// Answers with `authorizer` (the one the server's request filter asks).
    pub fn new(authorizer: Arc<dyn Authorizer>) -> Self {
        let schema = object_schema(
            "SelfSubjectAccessReview checks whether or the current user can perform an action.",
            structural_schema_of::<authz::SelfSubjectAccessReviewSpec>(),
            Some(structural_schema_of::<authz::SubjectAccessReviewStatus>()),
            false,
        );
        SelfSubjectAccessReviews {
            info: review_info(AUTHORIZATION_GROUP, "v1", "SelfSubjectAccessReview", schema),
            authorizer,
        }
    }
}

fn requirements(
    reqs: Option<&[k8s_openapi::apimachinery::pkg::apis::meta::v1::FieldSelectorRequirement]>,
) -> Vec<SelectorRequirement> {
    reqs.unwrap_or_default()
        .iter()
        .map(|r| SelectorRequirement {
            key: r.key.clone(),
            operator: r.operator.clone(),
            values: r.values.clone().unwrap_or_default(),
        })
        .collect()
}

fn label_requirements(
    reqs: Option<&[k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelectorRequirement]>,
) -> Vec<SelectorRequirement> {
    reqs.unwrap_or_default()
        .iter()
        .map(|r| SelectorRequirement {
            key: r.key.clone(),
            operator: r.operator.clone(),
            values: r.values.clone().unwrap_or_default(),
        })
        .collect()
}

/// Upstream's validation of a SelfSubjectAccessReview (`ValidateSelfSubjectAccessReview`).
fn validate_access_review(
    metadata: &Value,
    spec: &authz::SelfSubjectAccessReviewSpec,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    match (&spec.resource_attributes, &spec.non_resource_attributes) {
        (Some(_), Some(n)) => errs.push(FieldError::invalid(
            "spec.nonResourceAttributes",
            serde_json::to_value(n).unwrap_or(Value::Null),
            "cannot be specified in combination with resourceAttributes",
        )),
        // Upstream renders the absent (nil) value as the string "null".
        (None, None) => errs.push(FieldError::invalid(
            "spec.resourceAttributes",
            "null",
            "exactly one of nonResourceAttributes or resourceAttributes must be specified",
        )),
        _ => {}
    }
    // Upstream compares the decoded ObjectMeta with the empty one; `managedFields` do not count,
    // and kubectl's `creationTimestamp: null` decodes to the zero time.
    let set = metadata.as_object().is_some_and(|m| {
        m.iter()
            .any(|(k, v)| k != "managedFields" && !is_empty_value(v))
    });
    if set {
        errs.push(FieldError::invalid(
            "metadata",
            metadata.clone(),
            "must be empty",
        ));
    }
    errs
}

fn is_empty_value(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::Bool(b) => !b,
    }
}

/// The attributes a SelfSubjectAccessReview asks about, for `user` (upstream's
/// `ResourceAttributesFrom` / `NonResourceAttributesFrom`). Selectors are taken from their
/// `requirements`; a `rawSelector` is not parsed.
fn access_attributes(user: &UserInfo, spec: &authz::SelfSubjectAccessReviewSpec) -> Attributes {
    let s = |v: &Option<String>| v.clone().unwrap_or_default();
    let request = match (&spec.resource_attributes, &spec.non_resource_attributes) {
        (Some(r), _) => Request::Resource(ResourceAttributes {
            verb: s(&r.verb),
            group: s(&r.group),
            version: s(&r.version),
            resource: s(&r.resource),
            subresource: s(&r.subresource),
            namespace: s(&r.namespace),
            name: s(&r.name),
            field_selector: requirements(
                r.field_selector
                    .as_ref()
                    .and_then(|f| f.requirements.as_deref()),
            ),
            label_selector: label_requirements(
                r.label_selector
                    .as_ref()
                    .and_then(|l| l.requirements.as_deref()),
            ),
        }),
        (None, n) => {
            let n = n.clone().unwrap_or_default();
            Request::NonResource(NonResourceAttributes {
                path: s(&n.path),
                verb: s(&n.verb),
            })
        }
    };
    Attributes {
        user: user.clone(),
        request,
    }
}

review_storage!(
    SelfSubjectAccessReviews,
    protobuf::self_subject_access_review
);

impl SelfSubjectAccessReviews {
    /// Answers a create of a review with this body.
    async fn review(&self, ctx: &RequestContext, body: Value) -> Result<Bytes, ApiError> {
        let spec: authz::SelfSubjectAccessReviewSpec = decode(&body, "spec")?;
        let metadata = body.get("metadata").cloned().unwrap_or(Value::Null);
        let errs = validate_access_review(&metadata, &spec);
        if !errs.is_empty() {
            return Err(ApiError::invalid(&self.info, "", &errs));
        }
        let attrs = access_attributes(&ctx.user, &spec);
        let status = match self.authorizer.authorize(&attrs).await {
            Ok(Decision::Allow) => authz::SubjectAccessReviewStatus {
                allowed: true,
                ..Default::default()
            },
            Ok(Decision::Deny(reason)) => authz::SubjectAccessReviewStatus {
                denied: Some(true),
                reason: (!reason.is_empty()).then_some(reason),
                ..Default::default()
            },
            Ok(Decision::NoOpinion(reason)) => authz::SubjectAccessReviewStatus {
                reason: (!reason.is_empty()).then_some(reason),
                ..Default::default()
            },
            Err(e) => authz::SubjectAccessReviewStatus {
                evaluation_error: Some(e.to_string()),
                ..Default::default()
            },
        };
        let metadata = if metadata.is_object() {
            metadata
        } else {
            empty_metadata()
        };
        answer(
            &self.info,
            metadata,
            Some(to_json(&spec)?),
            to_json(&status)?,
        )
    }
}

// ---------------------------------------------------------------------------------------------
// SelfSubjectRulesReview

/// Lists what a user may do in a namespace, for `SelfSubjectRulesReview` (upstream's
/// `authorizer.RuleResolver`). Rules are additive: a listed rule is allowed even when the
/// answer is incomplete.
pub(crate) trait RulesResolver: Send + Sync + 'static {
    /// The rules of `user` in `namespace`; `incomplete` when some authorizer cannot list its
    /// rules.
    fn rules_for(&self, user: &UserInfo, namespace: &str) -> authz::SubjectRulesReviewStatus;
}

/// Every verb on every resource and path: the rules of a user who may do anything (what
/// [`crate::authz::AllowAll`] allows everyone, and upstream's `cluster-admin` role).
pub fn everything() -> authz::SubjectRulesReviewStatus {
    let all = || vec!["*".to_string()];
    authz::SubjectRulesReviewStatus {
        resource_rules: vec![authz::ResourceRule {
            verbs: all(),
            api_groups: Some(all()),
            resources: Some(all()),
            resource_names: None,
        }],
        non_resource_rules: vec![authz::NonResourceRule {
            verbs: all(),
            non_resource_urls: Some(all()),
        }],
        incomplete: false,
        evaluation_error: None,
    }
}

/// The rules of [`crate::authz::AllowAll`]: everything, for everyone.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct AllowAllRules;

impl RulesResolver for AllowAllRules {
    fn rules_for(&self, _user: &UserInfo, _namespace: &str) -> authz::SubjectRulesReviewStatus {
        everything()
    }
}

/// The rules of a host whose privileged groups may do everything and whose other users are
/// decided by authorizers that cannot list rules: members get [`everything`], others the
/// [`BasicUser`] rules, marked incomplete.
#[derive(Clone, Debug)]
pub(crate) struct PrivilegedRules {
    groups: Vec<String>,
}

impl PrivilegedRules {
    /// Members of `groups` may do everything.
    pub fn new<S: Into<String>>(groups: impl IntoIterator<Item = S>) -> Self {
        PrivilegedRules {
            groups: groups.into_iter().map(Into::into).collect(),
        }
    }
}

impl RulesResolver for PrivilegedRules {
    fn rules_for(&self, user: &UserInfo, _namespace: &str) -> authz::SubjectRulesReviewStatus {
        if user.groups.iter().any(|g| self.groups.contains(g)) {
            return everything();
        }
        let mut rules = authz::SubjectRulesReviewStatus {
            incomplete: true,
            ..Default::default()
        };
        if user.groups.iter().any(|g| g == AUTHENTICATED) {
            rules.resource_rules = BasicUser::rules();
        }
        rules
    }
}

/// `selfsubjectrulesreviews` of `authorization.k8s.io/v1`: the caller's rules in
/// `spec.namespace`, from a [`RulesResolver`].
pub(crate) struct SelfSubjectRulesReviews {
    info: ResourceInfo,
    rules: Arc<dyn RulesResolver>,
}

impl SelfSubjectRulesReviews {
    /// Answers from `rules`.
    pub fn new(rules: Arc<dyn RulesResolver>) -> Self {
        let schema = object_schema(
            "SelfSubjectRulesReview enumerates the set of actions the current user can perform within a namespace.",
            structural_schema_of::<authz::SelfSubjectRulesReviewSpec>(),
            Some(structural_schema_of::<authz::SubjectRulesReviewStatus>()),
            false,
        );
        SelfSubjectRulesReviews {
            info: review_info(AUTHORIZATION_GROUP, "v1", "SelfSubjectRulesReview", schema),
            rules,
        }
    }
}

review_storage!(SelfSubjectRulesReviews, protobuf::self_subject_rules_review);

impl SelfSubjectRulesReviews {
    /// Answers a create of a review with this body.
    async fn review(&self, ctx: &RequestContext, body: Value) -> Result<Bytes, ApiError> {
        let spec: authz::SelfSubjectRulesReviewSpec = decode(&body, "spec")?;
        let namespace = spec.namespace.unwrap_or_default();
        if namespace.is_empty() {
            return Err(ApiError::bad_request("no namespace on request"));
        }
        let status = self.rules.rules_for(&ctx.user, &namespace);
        // As upstream, the answer is a new review: an empty spec and the status.
        answer(
            &self.info,
            empty_metadata(),
            Some(json!({})),
            to_json(&status)?,
        )
    }
}

// ---------------------------------------------------------------------------------------------
// Who may create them

/// The group of every authenticated user.
const AUTHENTICATED: &str = "system:authenticated";

/// Lets every authenticated user create the three self reviews, as upstream's
/// `system:basic-user` ClusterRole bound to `system:authenticated`; no opinion on anything else.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct BasicUser;

impl BasicUser {
    /// The rules of the role, as a SelfSubjectRulesReview lists them.
    pub fn rules() -> Vec<authz::ResourceRule> {
        [
            (AUTHORIZATION_GROUP, "selfsubjectaccessreviews"),
            (AUTHORIZATION_GROUP, "selfsubjectrulesreviews"),
            (AUTHENTICATION_GROUP, "selfsubjectreviews"),
        ]
        .into_iter()
        .map(|(group, resource)| authz::ResourceRule {
            verbs: vec!["create".into()],
            api_groups: Some(vec![group.into()]),
            resources: Some(vec![resource.into()]),
            resource_names: None,
        })
        .collect()
    }
}

#[async_trait::async_trait]
impl Authorizer for BasicUser {
    async fn authorize(&self, attrs: &Attributes) -> Result<Decision, AuthorizationError> {
        let allowed = attrs.user.groups.iter().any(|g| g == AUTHENTICATED)
            && match &attrs.request {
                Request::Resource(r) => {
                    r.verb == "create"
                        && r.subresource.is_empty()
                        && matches!(
                            (r.group.as_str(), r.resource.as_str()),
                            (AUTHORIZATION_GROUP, "selfsubjectaccessreviews")
                                | (AUTHORIZATION_GROUP, "selfsubjectrulesreviews")
                                | (AUTHENTICATION_GROUP, "selfsubjectreviews")
                        )
                }
                Request::NonResource(_) => false,
            };
        Ok(if allowed {
            Decision::Allow
        } else {
            Decision::NoOpinion(String::new())
        })
    }
}

/// The self-review storages: `selfsubjectreviews` in every version of
/// [`SELF_SUBJECT_REVIEW_VERSIONS`] (for the `authentication.k8s.io` group), then
/// `selfsubjectaccessreviews` and `selfsubjectrulesreviews` (for `authorization.k8s.io`).
pub(crate) struct SelfReviews {
    /// `authentication.k8s.io` storages.
    pub authentication: Vec<Arc<dyn RestStorage>>,
    /// `authorization.k8s.io` storages.
    pub authorization: Vec<Arc<dyn RestStorage>>,
}

impl SelfReviews {
    /// Storages answering with `authorizer` and `rules`.
    pub fn new(authorizer: Arc<dyn Authorizer>, rules: Arc<dyn RulesResolver>) -> Self {
        SelfReviews {
            authentication: SELF_SUBJECT_REVIEW_VERSIONS
                .iter()
                .map(|v| Arc::new(SelfSubjectReviews::new(v)) as Arc<dyn RestStorage>)
                .collect(),
            authorization: vec![
                Arc::new(SelfSubjectAccessReviews::new(authorizer)),
                Arc::new(SelfSubjectRulesReviews::new(rules)),
            ],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::admission::AdmissionChain;
    use crate::authz::AllowAll;
    use crate::registry::scheme::Registry;

    fn ctx(user: UserInfo) -> RequestContext {
        RequestContext {
            namespace: None,
            user,
            admission: Arc::new(AdmissionChain::new(Vec::new())),
            registry: Arc::new(Registry::default()),
            request_resource: None,
            notes: Default::default(),
        }
    }

    fn alice() -> UserInfo {
        let mut u = UserInfo::new("alice", &["editors", AUTHENTICATED]);
        u.uid = "u-1".into();
        u.extra
            .insert("scopes".into(), vec!["a".into(), "b".into()]);
        u
    }

    async fn create(
        storage: &dyn RestStorage,
        user: UserInfo,
        body: Value,
    ) -> Result<Value, ApiError> {
        let bytes = storage
            .create(&ctx(user), body, &WriteOptions::default())
            .await?;
        Ok(serde_json::from_slice(&bytes).unwrap())
    }

    #[tokio::test]
    async fn self_subject_review_answers_the_caller() {
        for version in SELF_SUBJECT_REVIEW_VERSIONS {
            let ssr = SelfSubjectReviews::new(version);
            let out = create(
                &ssr,
                alice(),
                json!({"status": {"userInfo": {"username": "eve"}}}),
            )
            .await
            .unwrap();
            assert_eq!(
                out["apiVersion"],
                format!("authentication.k8s.io/{version}")
            );
            assert_eq!(out["kind"], "SelfSubjectReview");
            assert_eq!(
                out["status"]["userInfo"],
                json!({"username": "alice", "uid": "u-1", "groups": ["editors", AUTHENTICATED],
                       "extra": {"scopes": ["a", "b"]}})
            );
            assert!(
                out["metadata"]["creationTimestamp"]
                    .as_str()
                    .unwrap()
                    .ends_with('Z')
            );
            assert!(out.get("spec").is_none(), "{out}");
        }
    }

    struct DenyAll;

    #[async_trait::async_trait]
    impl Authorizer for DenyAll {
        async fn authorize(&self, attrs: &Attributes) -> Result<Decision, AuthorizationError> {
            Ok(Decision::Deny(format!("{} may not", attrs.user.username)))
        }
    }

    #[tokio::test]
    async fn self_subject_access_review_asks_the_authorizer_for_the_caller() {
        let body = json!({"metadata": {"creationTimestamp": null},
                          "spec": {"resourceAttributes": {"verb": "create", "group": "wardle.example.com", "resource": "flunders", "namespace": "default"}}});
        let allow = SelfSubjectAccessReviews::new(Arc::new(AllowAll));
        let out = create(&allow, alice(), body.clone()).await.unwrap();
        assert_eq!(out["status"], json!({"allowed": true}));
        assert_eq!(out["spec"]["resourceAttributes"]["resource"], "flunders");
        let deny = SelfSubjectAccessReviews::new(Arc::new(DenyAll));
        let out = create(&deny, alice(), body).await.unwrap();
        assert_eq!(
            out["status"],
            json!({"allowed": false, "denied": true, "reason": "alice may not"})
        );
    }

    #[tokio::test]
    async fn self_subject_access_review_is_validated_as_upstream() {
        let sar = SelfSubjectAccessReviews::new(Arc::new(AllowAll));
        let err = create(&sar, alice(), json!({"spec": {}}))
            .await
            .unwrap_err();
        assert_eq!(err.code, 422);
        assert_eq!(
            err.message,
            "SelfSubjectAccessReview.authorization.k8s.io \"\" is invalid: spec.resourceAttributes: Invalid value: \"null\": exactly one of nonResourceAttributes or resourceAttributes must be specified"
        );
        let both = json!({"spec": {"resourceAttributes": {"verb": "get"},
                                   "nonResourceAttributes": {"verb": "get", "path": "/x"}}});
        let err = create(&sar, alice(), both).await.unwrap_err();
        assert_eq!(err.code, 422);
        assert!(
            err.message
                .contains("spec.nonResourceAttributes: Invalid value: "),
            "{}",
            err.message
        );
        let named = json!({"metadata": {"name": "x"}, "spec": {"nonResourceAttributes": {"verb": "get", "path": "/x"}}});
        let err = create(&sar, alice(), named).await.unwrap_err();
        assert!(
            err.message.contains("metadata: Invalid value"),
            "{}",
            err.message
        );
        assert!(err.message.ends_with("must be empty"), "{}", err.message);
        let wrong = json!({"spec": {"resourceAttributes": {"verb": 7}}});
        assert_eq!(create(&sar, alice(), wrong).await.unwrap_err().code, 400);
    }

    #[tokio::test]
    async fn self_subject_rules_review_needs_a_namespace_and_lists_the_rules() {
        let srr = SelfSubjectRulesReviews::new(Arc::new(AllowAllRules));
        let err = create(&srr, alice(), json!({"spec": {}}))
            .await
            .unwrap_err();
        assert_eq!(
            (err.code, err.message.as_str()),
            (400, "no namespace on request")
        );
        let out = create(&srr, alice(), json!({"spec": {"namespace": "default"}}))
            .await
            .unwrap();
        assert_eq!(
            out["status"],
            json!({"resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
                   "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
                   "incomplete": false})
        );
        let host = PrivilegedRules::new(["system:masters"]);
        let admin = UserInfo::new("admin", &["system:masters", AUTHENTICATED]);
        assert_eq!(host.rules_for(&admin, "default"), everything());
        let rules = host.rules_for(&alice(), "default");
        assert!(rules.incomplete);
        assert_eq!(rules.resource_rules, BasicUser::rules());
    }

    #[tokio::test]
    async fn basic_users_may_create_self_reviews_only() {
        let attrs = |user: UserInfo, verb: &str, group: &str, resource: &str| Attributes {
            user,
            request: Request::Resource(ResourceAttributes {
                verb: verb.into(),
                group: group.into(),
                version: "v1".into(),
                resource: resource.into(),
                ..Default::default()
            }),
        };
        let b = BasicUser;
        for (g, r) in [
            (AUTHORIZATION_GROUP, "selfsubjectaccessreviews"),
            (AUTHORIZATION_GROUP, "selfsubjectrulesreviews"),
            (AUTHENTICATION_GROUP, "selfsubjectreviews"),
        ] {
            let d = b.authorize(&attrs(alice(), "create", g, r)).await;
            assert_eq!(d, Ok(Decision::Allow), "{g}/{r}");
            let d = b.authorize(&attrs(alice(), "list", g, r)).await;
            assert_eq!(d, Ok(Decision::NoOpinion(String::new())), "{g}/{r}");
            let anonymous = UserInfo::new("system:anonymous", &["system:unauthenticated"]);
            let d = b.authorize(&attrs(anonymous, "create", g, r)).await;
            assert_eq!(d, Ok(Decision::NoOpinion(String::new())), "{g}/{r}");
        }
        let d = b
            .authorize(&attrs(
                alice(),
                "create",
                AUTHORIZATION_GROUP,
                "subjectaccessreviews",
            ))
            .await;
        assert_eq!(d, Ok(Decision::NoOpinion(String::new())));
    }
}
