//! The object checks: CRUD, watch, paging, selectors, patches and server-side apply, with
//! objects made from a sample.

use std::collections::BTreeMap;
use std::time::Duration;

use kube::api::{
    Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams, WatchEvent,
    WatchParams,
};
use kube::discovery::ApiResource as KubeResource;
use serde_json::{Value, json};

use super::api::{collection_path, describe, ensure, request};
use crate::resource::ResourceInfo;
use crate::testing::WatchEvents;
use crate::testing::watch_events::event_type;

/// How long the watch check waits for its events.
const WATCH_TIMEOUT: Duration = Duration::from_secs(10);
/// The label every object of the check carries (its value: the check's name).
const LABEL: &str = "conformance";
/// The field manager of the apply check.
const MANAGER: &str = "conformance";
/// The Table form of a response.
const TABLE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io";

/// The objects of one resource the checks create, from a sample.
pub struct Objects<'a> {
    client: &'a kube::Client,
    info: &'a ResourceInfo,
    sample: Value,
    api: Api<DynamicObject>,
}

fn name_of(object: &DynamicObject) -> String {
    object.metadata.name.clone().unwrap_or_default()
}

fn names(list: &[DynamicObject]) -> Vec<String> {
    list.iter().map(name_of).collect()
}

fn labels(object: &DynamicObject) -> BTreeMap<String, String> {
    object.metadata.labels.clone().unwrap_or_default()
}

impl<'a> Objects<'a> {
    /// Objects of `info` made from `sample`.
    pub fn new(client: &'a kube::Client, info: &'a ResourceInfo, sample: Value) -> Self {
        let resource = KubeResource {
            group: info.group.clone(),
            version: info.version.clone(),
            api_version: info.api_version(),
            kind: info.kind.clone(),
            plural: info.plural.clone(),
        };
        let api = if info.namespaced() {
            Api::namespaced_with(client.clone(), super::NAMESPACE, &resource)
        } else {
            Api::all_with(client.clone(), &resource)
        };
        Objects {
            client,
            info,
            sample,
            api,
        }
    }

    /// The sample named `name` with the label `conformance=<check>` and `extra` labels.
    fn object(&self, name: &str, check: &str, extra: &[(&str, &str)]) -> Value {
        let mut object = self.sample.clone();
        object["apiVersion"] = json!(self.info.api_version());
        object["kind"] = json!(self.info.kind);
        let mut labels = BTreeMap::from([(LABEL.to_string(), check.to_string())]);
        labels.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        object["metadata"] = json!({"name": name, "labels": labels});
        if self.info.namespaced() {
            object["metadata"]["namespace"] = json!(super::NAMESPACE);
        }
        object
    }

    async fn create(
        &self,
        name: &str,
        check: &str,
        extra: &[(&str, &str)],
    ) -> Result<DynamicObject, String> {
        let object: DynamicObject = serde_json::from_value(self.object(name, check, extra))
            .map_err(|e| format!("the sample is not an object: {e}"))?;
        self.api
            .create(&PostParams::default(), &object)
            .await
            .map_err(|e| {
                format!(
                    "{} (the sample object: {}; give a valid one with Conformance::sample)",
                    describe("POST", &collection_path(self.info), &e),
                    self.sample
                )
            })
    }

    async fn list(
        &self,
        params: &ListParams,
    ) -> Result<kube::core::ObjectList<DynamicObject>, String> {
        self.api
            .list(params)
            .await
            .map_err(|e| describe("LIST", &collection_path(self.info), &e))
    }

    fn path(&self, name: &str) -> String {
        format!("{}/{name}", collection_path(self.info))
    }

    /// Create, get, list, update, a stale update (409 Conflict), the Table form, delete, and a
    /// get of the deleted object (404 NotFound).
    pub async fn crud(&self) -> Result<(), String> {
        let name = "conformance-crud";
        let path = self.path(name);
        let created = self.create(name, "crud", &[]).await?;
        ensure(name_of(&created) == name, || {
            format!("POST answered an object named {:?}", name_of(&created))
        })?;
        let meta = &created.metadata;
        ensure(
            meta.uid.is_some()
                && meta.resource_version.is_some()
                && meta.creation_timestamp.is_some(),
            || {
                format!(
                    "POST answered metadata without uid, resourceVersion or creationTimestamp: {meta:?}"
                )
            },
        )?;
        let got = self
            .api
            .get(name)
            .await
            .map_err(|e| describe("GET", &path, &e))?;
        ensure(
            got.metadata.resource_version == created.metadata.resource_version
                && got.data.get("spec") == created.data.get("spec"),
            || format!("GET answered another object than POST: {got:?} after {created:?}"),
        )?;
        let listed = self
            .list(&ListParams::default().labels("conformance=crud"))
            .await?;
        ensure(names(&listed.items) == [name], || {
            format!("LIST conformance=crud answered {:?}", names(&listed.items))
        })?;

        let mut changed = got.clone();
        changed
            .metadata
            .labels
            .get_or_insert_with(Default::default)
            .insert("updated".into(), "yes".into());
        let updated = self
            .api
            .replace(name, &PostParams::default(), &changed)
            .await
            .map_err(|e| describe("PUT", &path, &e))?;
        ensure(
            labels(&updated).get("updated").map(String::as_str) == Some("yes")
                && updated.metadata.resource_version != got.metadata.resource_version,
            || format!("PUT did not store the new label with a new resourceVersion: {updated:?}"),
        )?;
        match self.api.replace(name, &PostParams::default(), &got).await {
            Err(kube::Error::Api(s)) if s.code == 409 && s.reason == "Conflict" => {}
            Err(e) => {
                return Err(format!(
                    "{}; a PUT with a stale resourceVersion must be a 409 Conflict",
                    describe("PUT", &path, &e)
                ));
            }
            Ok(_) => {
                return Err(format!(
                    "PUT {path} with a stale resourceVersion succeeded; it must be a 409 Conflict"
                ));
            }
        }

        let table = request(self.client, http::Method::GET, &path, TABLE, None)
            .await
            .map_err(|e| describe("GET (Table)", &path, &e))?;
        let columns: Vec<&str> = table["columnDefinitions"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|c| c["name"].as_str())
            .collect();
        for column in &self.info.printer_columns {
            ensure(columns.contains(&column.name.as_str()), || {
                format!(
                    "the Table of {path} has no column {:?} (its columns: {columns:?})",
                    column.name
                )
            })?;
        }
        let rows = table["rows"].as_array().cloned().unwrap_or_default();
        ensure(
            rows.len() == 1 && rows[0]["cells"].as_array().map(Vec::len) == Some(columns.len()),
            || {
                format!(
                    "the Table of {path} must have one row of {} cells: {table}",
                    columns.len()
                )
            },
        )?;

        self.api
            .delete(name, &DeleteParams::default())
            .await
            .map_err(|e| describe("DELETE", &path, &e))?;
        match self.api.get(name).await {
            Err(kube::Error::Api(s)) if s.code == 404 && s.reason == "NotFound" => Ok(()),
            Err(e) => Err(format!(
                "{}; a GET of a deleted object must be a 404 NotFound",
                describe("GET", &path, &e)
            )),
            Ok(o) => Err(format!("GET {path} after DELETE still answers {o:?}")),
        }
    }

    /// A watch from a list's resourceVersion sees ADDED, MODIFIED and DELETED in order, with
    /// growing resourceVersions.
    pub async fn watch(&self) -> Result<(), String> {
        let name = "conformance-watch";
        let listed = self
            .list(&ListParams::default().labels("conformance=watch"))
            .await?;
        let since = listed.metadata.resource_version.unwrap_or_default();
        let mut events = WatchEvents::start(
            &self.api,
            &WatchParams::default().labels("conformance=watch"),
            &since,
        )
        .await
        .map_err(|e| describe("WATCH", &collection_path(self.info), &e))?;
        self.create(name, "watch", &[]).await?;
        self.api
            .patch(
                name,
                &PatchParams::default(),
                &Patch::Merge(json!({"metadata": {"labels": {"watched": "yes"}}})),
            )
            .await
            .map_err(|e| describe("PATCH", &self.path(name), &e))?;
        self.api
            .delete(name, &DeleteParams::default())
            .await
            .map_err(|e| describe("DELETE", &self.path(name), &e))?;
        let seen = events.try_take(3, WATCH_TIMEOUT).await.map_err(|(why, seen)| {
            format!(
                "a watch from resourceVersion {since} must see ADDED, MODIFIED, DELETED: {why}; seen {:?}",
                WatchEvents::types(&seen)
            )
        })?;
        let types = WatchEvents::types(&seen);
        let mut versions = Vec::new();
        for event in &seen {
            let object = match event {
                WatchEvent::Added(o) | WatchEvent::Modified(o) | WatchEvent::Deleted(o) => o,
                _ => return Err(format!("unexpected {} event", event_type(event))),
            };
            ensure(name_of(object) == name, || {
                format!("the watch of conformance=watch saw {}", name_of(object))
            })?;
            let rv = object.metadata.resource_version.as_deref().unwrap_or("");
            versions.push(rv.parse::<u64>().unwrap_or(0));
        }
        ensure(types == ["ADDED", "MODIFIED", "DELETED"], || {
            format!("a watch must see ADDED, MODIFIED, DELETED; it saw {types:?}")
        })?;
        ensure(versions.windows(2).all(|w| w[0] < w[1]), || {
            format!("the watch events' resourceVersions must grow: {versions:?}")
        })
    }

    /// A list with `limit=1` follows `continue` through every object once, in name order.
    pub async fn paging(&self) -> Result<(), String> {
        let created = [
            "conformance-page-0",
            "conformance-page-1",
            "conformance-page-2",
        ];
        for name in created {
            self.create(name, "paging", &[]).await?;
        }
        let mut seen = Vec::new();
        let mut token: Option<String> = None;
        for _ in 0..=created.len() {
            let mut params = ListParams::default().labels("conformance=paging").limit(1);
            if let Some(t) = &token {
                params = params.continue_token(t);
            }
            let page = self.list(&params).await?;
            ensure(page.items.len() <= 1, || {
                format!("a list with limit=1 answered {} items", page.items.len())
            })?;
            seen.extend(names(&page.items));
            token = page.metadata.continue_.filter(|t| !t.is_empty());
            if token.is_none() {
                break;
            }
        }
        ensure(token.is_none() && seen == created, || {
            format!(
                "pages of limit=1 must hold {created:?} in order and end without a continue token; they held {seen:?}{}",
                if token.is_some() { " and went on" } else { "" }
            )
        })
    }

    /// Label selectors (equality, set-based, existence) and the `metadata.name` field selector
    /// choose exactly the matching objects; an unknown field selector is a 400 BadRequest.
    pub async fn selectors(&self) -> Result<(), String> {
        let (front, back) = ("conformance-select-front", "conformance-select-back");
        self.create(front, "selectors", &[("tier", "front")])
            .await?;
        self.create(back, "selectors", &[("tier", "back")]).await?;
        let cases: [(&str, Option<&str>, &[&str]); 6] = [
            ("conformance=selectors", None, &[back, front]),
            ("conformance=selectors,tier=front", None, &[front]),
            ("conformance=selectors,tier!=front", None, &[back]),
            ("conformance=selectors,tier in (back,middle)", None, &[back]),
            ("conformance=selectors,!tier", None, &[]),
            (
                "conformance=selectors",
                Some("metadata.name=conformance-select-back"),
                &[back],
            ),
        ];
        for (labels, fields, want) in cases {
            let mut params = ListParams::default().labels(labels);
            if let Some(f) = fields {
                params = params.fields(f);
            }
            let got = names(&self.list(&params).await?.items);
            ensure(got == want, || {
                format!(
                    "labelSelector {labels:?}{} chose {got:?}, not {want:?}",
                    fields
                        .map(|f| format!(" fieldSelector {f:?}"))
                        .unwrap_or_default()
                )
            })?;
        }
        match self
            .api
            .list(&ListParams::default().fields("spec.noSuchField=x"))
            .await
        {
            Err(kube::Error::Api(s)) if s.code == 400 && s.reason == "BadRequest" => Ok(()),
            Err(e) => Err(format!(
                "{}; an unknown field selector must be a 400 BadRequest",
                describe("LIST", &collection_path(self.info), &e)
            )),
            Ok(l) => Err(format!(
                "the field selector spec.noSuchField=x was accepted ({} items); it must be a 400 BadRequest",
                l.items.len()
            )),
        }
    }

    /// A JSON merge patch and a JSON patch change what they say and keep the rest;
    /// server-side apply creates an object, records its field manager, and applying the same
    /// configuration again changes nothing.
    pub async fn patch_and_apply(&self) -> Result<(), String> {
        let name = "conformance-patch";
        let path = self.path(name);
        let created = self.create(name, "patch", &[]).await?;
        let merged = self
            .api
            .patch(
                name,
                &PatchParams::default(),
                &Patch::Merge(json!({"metadata": {"labels": {"merged": "yes"}}})),
            )
            .await
            .map_err(|e| describe("PATCH (merge)", &path, &e))?;
        let want = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        ensure(
            labels(&merged) == want(&[(LABEL, "patch"), ("merged", "yes")])
                && merged.data.get("spec") == created.data.get("spec"),
            || format!("a merge patch adding a label answered {merged:?}"),
        )?;
        let json_patch = json!([
            {"op": "test", "path": "/metadata/labels/merged", "value": "yes"},
            {"op": "add", "path": "/metadata/labels/json", "value": "yes"},
            {"op": "remove", "path": "/metadata/labels/merged"}
        ]);
        let patched = request(
            self.client,
            http::Method::PATCH,
            &path,
            "application/json",
            Some((
                "application/json-patch+json",
                json_patch.to_string().into_bytes(),
            )),
        )
        .await
        .map_err(|e| describe("PATCH (JSON patch)", &path, &e))?;
        let patched_labels: BTreeMap<String, String> =
            serde_json::from_value(patched["metadata"]["labels"].clone()).unwrap_or_default();
        ensure(
            patched_labels == want(&[(LABEL, "patch"), ("json", "yes")]),
            || {
                format!(
                    "a JSON patch (test, add, remove of labels) answered the labels {patched_labels:?}"
                )
            },
        )?;

        let applied_name = "conformance-apply";
        let apply_path = self.path(applied_name);
        let configuration = self.object(applied_name, "patch", &[("applied", "yes")]);
        let params = PatchParams::apply(MANAGER).force();
        let apply = |what: &'static str| {
            let patch = Patch::Apply(&configuration);
            let (params, apply_path) = (&params, &apply_path);
            async move {
                let applied = self.api.patch(applied_name, params, &patch).await;
                applied.map_err(|e| describe(what, apply_path, &e))
            }
        };
        let applied = apply("PATCH (apply)").await?;
        ensure(
            labels(&applied).get("applied").map(String::as_str) == Some("yes"),
            || format!("server-side apply did not create the object as configured: {applied:?}"),
        )?;
        let managers: Vec<(String, String)> = applied
            .metadata
            .managed_fields
            .iter()
            .flatten()
            .map(|m| {
                (
                    m.manager.clone().unwrap_or_default(),
                    m.operation.clone().unwrap_or_default(),
                )
            })
            .collect();
        ensure(
            managers.contains(&(MANAGER.to_string(), "Apply".to_string())),
            || format!("managedFields after an apply by {MANAGER:?} are {managers:?}"),
        )?;
        let again = apply("PATCH (apply again)").await?;
        ensure(
            again.metadata.resource_version == applied.metadata.resource_version,
            || {
                format!(
                    "applying the same configuration again must change nothing, but the resourceVersion went from {:?} to {:?}",
                    applied.metadata.resource_version, again.metadata.resource_version
                )
            },
        )
    }

    /// Deletes whatever the checks left (a failed check stops half-way).
    pub async fn clean_up(&self) {
        let params = ListParams::default().labels(LABEL);
        if let Ok(list) = self.api.list(&params).await {
            for name in names(&list.items) {
                let _ = self.api.delete(&name, &DeleteParams::default()).await;
            }
        }
    }
}
