//! `admission.k8s.io/v1` `AdmissionReview`: the request sent to a webhook and the checks of
//! its response (upstream's `pkg/admission/plugin/webhook/request/admissionreview.go`).

use base64::Engine as _;
use serde_json::{Map, Value, json};

use crate::admission::webhook::versions::Versioned;
use crate::admission::{AdmissionAttributes, Operation};
use crate::error::ApiError;
use crate::resource::ResourceInfo;

/// The API version of the reviews sent and expected.
pub const API_VERSION: &str = "admission.k8s.io/v1";

/// A resource's `GroupVersionKind` and `GroupVersionResource`, as a review writes them.
fn kind_and_resource(info: &ResourceInfo) -> (Value, Value) {
    (
        json!({"group": info.group, "version": info.version, "kind": info.kind}),
        json!({"group": info.group, "version": info.version, "resource": info.plural}),
    )
}

/// The `AdmissionReview` for the request, with a new `uid`: `kind`, `resource` and the
/// objects in the version the webhook is called in (`versioned`), `requestKind` and
/// `requestResource` in the version the request named.
pub fn request(attrs: &AdmissionAttributes<'_>, versioned: &Versioned<'_>, uid: &str) -> Value {
    let (kind, resource) = kind_and_resource(versioned.resource);
    let (request_kind, request_resource) = kind_and_resource(attrs.request_resource);
    let user = attrs.user;
    let mut user_info = Map::new();
    user_info.insert("username".into(), json!(user.username));
    if !user.uid.is_empty() {
        user_info.insert("uid".into(), json!(user.uid));
    }
    if !user.groups.is_empty() {
        user_info.insert("groups".into(), json!(user.groups));
    }
    if !user.extra.is_empty() {
        user_info.insert("extra".into(), json!(user.extra));
    }
    let options_kind = match attrs.operation {
        Operation::Create => "CreateOptions",
        Operation::Update => "UpdateOptions",
        Operation::Delete => "DeleteOptions",
    };
    let mut options = json!({"apiVersion": "meta.k8s.io/v1", "kind": options_kind});
    if attrs.dry_run {
        options["dryRun"] = json!(["All"]);
    }
    let mut req = Map::new();
    req.insert("uid".into(), json!(uid));
    req.insert("kind".into(), kind);
    req.insert("resource".into(), resource);
    if let Some(sub) = attrs.subresource.filter(|s| !s.is_empty()) {
        req.insert("subResource".into(), json!(sub));
        req.insert("requestSubResource".into(), json!(sub));
    }
    req.insert("requestKind".into(), request_kind);
    req.insert("requestResource".into(), request_resource);
    if !attrs.name.is_empty() {
        req.insert("name".into(), json!(attrs.name));
    }
    if let Some(ns) = attrs.namespace.filter(|n| !n.is_empty()) {
        req.insert("namespace".into(), json!(ns));
    }
    req.insert("operation".into(), json!(attrs.operation.as_str()));
    req.insert("userInfo".into(), Value::Object(user_info));
    if let Some(object) = &versioned.object {
        req.insert("object".into(), object.clone());
    }
    if let Some(old) = &versioned.old_object {
        req.insert("oldObject".into(), old.clone());
    }
    req.insert("dryRun".into(), json!(attrs.dry_run));
    req.insert("options".into(), options);
    json!({"apiVersion": API_VERSION, "kind": "AdmissionReview", "request": req})
}

/// What a webhook answered.
#[derive(Debug)]
pub struct Verdict {
    /// Whether the request may go on.
    pub allowed: bool,
    /// The refusal's `status` (`code`, `message`, `reason`), if any.
    pub status: Value,
    /// The decoded JSON Patch of a mutating webhook, if any.
    pub patch: Option<json_patch::Patch>,
    /// The webhook's `warnings`, for the response.
    pub warnings: Vec<String>,
    /// The webhook's `auditAnnotations`, for the audit event (keyed by the webhook's name).
    pub audit_annotations: Vec<(String, String)>,
}

/// Checks a webhook's response to the review `uid` (`Err` is the reason it is invalid, in
/// upstream's words).
pub fn verdict(body: &[u8], uid: &str, mutating: bool) -> Result<Verdict, String> {
    let review: Value = serde_json::from_slice(body).map_err(|e| e.to_string())?;
    let Some(response) = review.get("response").filter(|r| r.is_object()) else {
        return Err("webhook response was absent".into());
    };
    let got_uid = response["uid"].as_str().unwrap_or_default();
    if got_uid != uid {
        return Err(format!("expected response.uid={uid:?}, got {got_uid:?}"));
    }
    let (api_version, kind) = (
        review["apiVersion"].as_str().unwrap_or_default(),
        review["kind"].as_str().unwrap_or_default(),
    );
    if api_version != API_VERSION || kind != "AdmissionReview" {
        return Err(format!(
            "expected webhook response of {API_VERSION}, Kind=AdmissionReview, got {api_version}, Kind={kind}"
        ));
    }
    let patch_type = response.get("patchType").filter(|t| !t.is_null());
    let patch = match response["patch"].as_str().filter(|p| !p.is_empty()) {
        None if patch_type.is_some() => {
            return Err(match mutating {
                true => "webhook returned response.patchType but not response.patch",
                false => "validating webhook may not return response.patchType",
            }
            .into());
        }
        None => None,
        Some(_) if !mutating => {
            return Err("validating webhook may not return response.patch".into());
        }
        Some(encoded) => {
            match response["patchType"].as_str().unwrap_or_default() {
                "" => {
                    return Err("webhook returned response.patch but not response.patchType".into());
                }
                "JSONPatch" => {}
                other => {
                    return Err(format!(
                        "webhook returned invalid response.patchType of {other:?}"
                    ));
                }
            }
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(encoded)
                .map_err(|e| e.to_string())?;
            Some(serde_json::from_slice(&bytes).map_err(|e| e.to_string())?)
        }
    };
    let warnings = match &response["warnings"] {
        Value::Array(items) => items
            .iter()
            .filter_map(|w| w.as_str().map(str::to_owned))
            .collect(),
        _ => Vec::new(),
    };
    let audit_annotations = match &response["auditAnnotations"] {
        Value::Object(map) => map
            .iter()
            .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
            .collect(),
        _ => Vec::new(),
    };
    Ok(Verdict {
        allowed: response["allowed"].as_bool().unwrap_or(false),
        status: response["status"].clone(),
        patch,
        warnings,
        audit_annotations,
    })
}

/// The code of a webhook's refusal: its status's, made 400 when below it (upstream's
/// `ToStatusErr`: no rejection is answered with a code under 400).
pub fn denial_code(status: &Value) -> u16 {
    status["code"]
        .as_u64()
        .and_then(|c| u16::try_from(c).ok())
        .filter(|c| *c >= 400)
        .unwrap_or(400)
}

/// Upstream's refusal of webhook `name`: the webhook's status (with [`denial_code`]), its
/// message prefixed with `admission webhook "<name>" denied the request`.
pub fn denied(name: &str, status: &Value) -> ApiError {
    let denied_by = format!("admission webhook {name:?} denied the request");
    let code = denial_code(status);
    let message = status["message"].as_str().unwrap_or_default();
    let reason = status["reason"].as_str().unwrap_or_default();
    let message = if !message.is_empty() {
        format!("{denied_by}: {message}")
    } else if !reason.is_empty() {
        format!("{denied_by}: {reason}")
    } else {
        format!("{denied_by} without explanation")
    };
    let mut err = ApiError::new(code, reason, message);
    if let Ok(details) = serde_json::from_value(status["details"].clone()) {
        err = err.with_details(details);
    }
    err
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn denials_follow_upstream() {
        let e = denied("deny.example.com", &json!({"message": "no", "code": 200}));
        assert_eq!(e.code, 400, "no rejection has a code under 400");
        assert_eq!(
            e.message,
            "admission webhook \"deny.example.com\" denied the request: no"
        );
        let e = denied("d", &json!({"reason": "NotAcceptable", "code": 406}));
        assert_eq!((e.code, e.reason.as_str()), (406, "NotAcceptable"));
        assert_eq!(
            e.message,
            "admission webhook \"d\" denied the request: NotAcceptable"
        );
        let e = denied("d", &Value::Null);
        assert_eq!(e.code, 400);
        assert_eq!(
            e.message,
            "admission webhook \"d\" denied the request without explanation"
        );
    }

    #[test]
    fn invalid_responses_are_named() {
        let ok = |v: Value, m| verdict(v.to_string().as_bytes(), "u", m);
        assert_eq!(
            ok(json!({}), true).unwrap_err(),
            "webhook response was absent"
        );
        let r = json!({"apiVersion": API_VERSION, "kind": "AdmissionReview",
                       "response": {"uid": "x", "allowed": true}});
        assert_eq!(
            ok(r, true).unwrap_err(),
            "expected response.uid=\"u\", got \"x\""
        );
        let r = json!({"apiVersion": API_VERSION, "kind": "AdmissionReview",
                       "response": {"uid": "u", "allowed": true, "patch": "W10="}});
        assert_eq!(
            ok(r.clone(), false).unwrap_err(),
            "validating webhook may not return response.patch"
        );
        assert_eq!(
            ok(r, true).unwrap_err(),
            "webhook returned response.patch but not response.patchType"
        );
        let r = json!({"apiVersion": API_VERSION, "kind": "AdmissionReview",
                       "response": {"uid": "u", "allowed": true, "patch": "W10=", "patchType": "JSONPatch"}});
        let v = ok(r, true).unwrap();
        assert!(v.allowed && v.patch.is_some());
        let r = json!({"apiVersion": API_VERSION, "kind": "AdmissionReview",
                       "response": {"uid": "u", "allowed": true, "patchType": "JSONPatch"}});
        assert_eq!(
            ok(r.clone(), true).unwrap_err(),
            "webhook returned response.patchType but not response.patch"
        );
        assert_eq!(
            ok(r, false).unwrap_err(),
            "validating webhook may not return response.patchType"
        );
        let r = json!({"apiVersion": API_VERSION, "kind": "AdmissionReview",
                       "response": {"uid": "u", "allowed": false, "warnings": ["a", "b"],
                                    "auditAnnotations": {"why": "quota"}}});
        let v = ok(r, false).unwrap();
        assert_eq!(v.warnings, ["a", "b"]);
        assert_eq!(
            v.audit_annotations,
            [("why".to_string(), "quota".to_string())]
        );
    }
}
