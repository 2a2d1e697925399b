//! A binding's parameters (upstream's `generic.CollectParams`): the objects of the policy's
//! `paramKind` its `paramRef` names, read from the host cluster.
//!
//! Upstream keeps an informer per parameter kind; here each evaluation reads the host (by name,
//! or a list by label selector), and the kind's resource is discovered once and remembered.

use std::collections::HashMap;
use std::sync::Mutex;

use k8s_openapi::api::admissionregistration::v1::{ParamKind, ParamRef};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::api::{Api, DynamicObject, ListParams};
use kube::core::GroupVersionKind;
use kube::discovery::{ApiResource, Scope};
use serde_json::Value;

/// The most parameter kinds remembered; past it the memory starts over.
const MAX_KINDS: usize = 256;

/// Reads parameters from the host.
pub(crate) struct Params {
    client: kube::Client,
    /// Each parameter kind's resource and whether it is namespaced.
    kinds: Mutex<HashMap<(String, String), (ApiResource, bool)>>,
}

impl Params {
    /// Parameters read through `client`.
    pub(crate) fn new(client: kube::Client) -> Self {
        Params {
            client,
            kinds: Mutex::new(HashMap::new()),
        }
    }

    async fn resource(&self, kind: &ParamKind) -> Result<(ApiResource, bool), String> {
        let api_version = kind.api_version.clone().unwrap_or_default();
        let name = kind.kind.clone().unwrap_or_default();
        let key = (api_version.clone(), name.clone());
        if let Some(found) = self
            .kinds
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&key)
        {
            return Ok(found.clone());
        }
        let (group, version) = match api_version.split_once('/') {
            Some((group, version)) => (group.to_string(), version.to_string()),
            None => (String::new(), api_version.clone()),
        };
        let gvk = GroupVersionKind::gvk(&group, &version, &name);
        let (resource, capabilities) = kube::discovery::pinned_kind(&self.client, &gvk)
            .await
            .map_err(|_| format!("paramKind kind `{}` not known", describe(kind)))?;
        let found = (resource, capabilities.scope == Scope::Namespaced);
        let mut kinds = self.kinds.lock().unwrap_or_else(|e| e.into_inner());
        if kinds.len() >= MAX_KINDS {
            kinds.clear();
        }
        kinds.insert(key, found.clone());
        Ok(found)
    }

    /// The parameters a binding's `param_ref` names for a request in `namespace` (empty for a
    /// cluster-scoped resource): `[null]` when the policy or binding uses none, and an error
    /// (a configuration error of the binding) in upstream's words.
    pub(crate) async fn collect(
        &self,
        kind: Option<&ParamKind>,
        param_ref: Option<&ParamRef>,
        namespace: &str,
    ) -> Result<Vec<Value>, String> {
        let (Some(kind), Some(param_ref)) = (kind, param_ref) else {
            return Ok(vec![Value::Null]);
        };
        let (resource, namespaced) = self.resource(kind).await?;
        let wanted_namespace = param_ref.namespace.as_deref().unwrap_or_default();
        let api: Api<DynamicObject> = if namespaced {
            let namespace = if wanted_namespace.is_empty() {
                namespace
            } else {
                wanted_namespace
            };
            if namespace.is_empty() {
                return Err("cannot use namespaced paramRef in policy binding that matches cluster-scoped resources".into());
            }
            Api::namespaced_with(self.client.clone(), namespace, &resource)
        } else if !wanted_namespace.is_empty() {
            return Err(
                "paramRef.namespace must not be provided for a cluster-scoped `paramKind`".into(),
            );
        } else {
            Api::all_with(self.client.clone(), &resource)
        };
        let found: Vec<DynamicObject> = match (param_ref.name.as_deref(), &param_ref.selector) {
            (Some(name), None) if !name.is_empty() => api
                .get_opt(name)
                .await
                .map_err(|e| e.to_string())?
                .into_iter()
                .collect(),
            (Some(name), Some(_)) if !name.is_empty() => {
                return Err("paramRef.name and paramRef.selector are mutually exclusive".into());
            }
            (_, Some(selector)) => {
                let params = ListParams::default().labels(&selector_string(selector)?);
                api.list(&params).await.map_err(|e| e.to_string())?.items
            }
            _ => return Err("one of name or selector must be provided".into()),
        };
        if found.is_empty() && param_ref.parameter_not_found_action.as_deref() == Some("Deny") {
            return Err(
                "no params found for policy binding with `Deny` parameterNotFoundAction".into(),
            );
        }
        found
            .into_iter()
            .map(|mut object| {
                if object.types.is_none() {
                    object.types = Some(kube::core::TypeMeta {
                        api_version: kind.api_version.clone().unwrap_or_default(),
                        kind: kind.kind.clone().unwrap_or_default(),
                    });
                }
                serde_json::to_value(object).map_err(|e| e.to_string())
            })
            .collect()
    }
}

fn describe(kind: &ParamKind) -> String {
    format!(
        "{}, Kind={}",
        kind.api_version.as_deref().unwrap_or_default(),
        kind.kind.as_deref().unwrap_or_default()
    )
}

/// A label selector in the query syntax (`a=b,c in (d,e),!f`).
fn selector_string(selector: &LabelSelector) -> Result<String, String> {
    let mut parts: Vec<String> = selector
        .match_labels
        .iter()
        .flatten()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    for req in selector.match_expressions.iter().flatten() {
        let values = req.values.as_deref().unwrap_or_default().join(",");
        parts.push(match req.operator.as_str() {
            "In" => format!("{} in ({values})", req.key),
            "NotIn" => format!("{} notin ({values})", req.key),
            "Exists" => req.key.clone(),
            "DoesNotExist" => format!("!{}", req.key),
            op => return Err(format!("{op:?} is not a valid label selector operator")),
        });
    }
    Ok(parts.join(","))
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelectorRequirement;

    #[test]
    fn selectors_become_query_syntax() {
        let selector = LabelSelector {
            match_labels: Some([("a".to_string(), "b".to_string())].into()),
            match_expressions: Some(vec![
                LabelSelectorRequirement {
                    key: "c".into(),
                    operator: "In".into(),
                    values: Some(vec!["d".into(), "e".into()]),
                },
                LabelSelectorRequirement {
                    key: "f".into(),
                    operator: "DoesNotExist".into(),
                    values: None,
                },
            ]),
        };
        assert_eq!(selector_string(&selector).unwrap(), "a=b,c in (d,e),!f");
    }
}
