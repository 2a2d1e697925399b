//! Encoding objects, lists and Status for the negotiated output.

use axum::body::Body;
use bytes::{BufMut, Bytes, BytesMut};
use http::{HeaderValue, Response, StatusCode, header};
use serde_json::Value;

use crate::endpoints::list_body::ListBody;
use crate::endpoints::negotiation::Output;
use crate::endpoints::table;
use crate::error::ApiError;
use crate::registry::rest::{ObjectList, WatchEventType};
use crate::resource::ResourceInfo;

/// A response with the given status, content type and body.
pub fn raw(code: StatusCode, content_type: &'static str, body: impl Into<Body>) -> Response<Body> {
    let mut res = Response::new(body.into());
    *res.status_mut() = code;
    res.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    res
}

/// A plain-text answer as Go's `http.Error` writes it: `text/plain; charset=utf-8` and
/// `X-Content-Type-Options: nosniff` (upstream's filters answer this way, not with a Status).
pub fn plain_text(code: StatusCode, body: impl Into<Body>) -> Response<Body> {
    let mut res = raw(code, "text/plain; charset=utf-8", body);
    res.headers_mut().insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    res
}

fn parse(bytes: &[u8]) -> Result<Value, ApiError> {
    serde_json::from_slice(bytes).map_err(ApiError::internal)
}

fn yaml(v: &Value) -> Result<Vec<u8>, ApiError> {
    serde_yaml_ng::to_string(v)
        .map(String::into_bytes)
        .map_err(ApiError::internal)
}

/// One object in the negotiated form.
pub fn object(
    code: StatusCode,
    output: &Output,
    info: &ResourceInfo,
    bytes: Bytes,
) -> Result<Response<Body>, ApiError> {
    Ok(match output {
        Output::Json => raw(code, "application/json", bytes),
        Output::Yaml => raw(code, "application/yaml", yaml(&parse(&bytes)?)?),
        Output::Table { include_object } => {
            let v = parse(&bytes)?;
            let rv = v
                .pointer("/metadata/resourceVersion")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            let t = table::table(info, &[v], &rv, None, None, *include_object, true);
            raw(
                code,
                "application/json",
                serde_json::to_vec(&t).map_err(ApiError::internal)?,
            )
        }
        Output::PartialObjectMetadataList => {
            return Err(crate::endpoints::negotiation::partial_metadata_mismatch(
                info, true,
            ));
        }
        Output::PartialObjectMetadata => {
            let v = parse(&bytes)?;
            let p = table::partial_object_metadata(&v, table::META_V1);
            raw(
                code,
                "application/json",
                serde_json::to_vec(&p).map_err(ApiError::internal)?,
            )
        }
    })
}

/// The bytes after a list's items.
const LIST_CLOSING: &[u8] = b"]}";

/// A list's JSON up to its first item: `{"apiVersion":…,"kind":…,"metadata":{…},"items":[`.
fn list_opening(info: &ResourceInfo, list: &ObjectList) -> Bytes {
    let mut out = BytesMut::with_capacity(256);
    out.put_slice(b"{\"apiVersion\":");
    out.put_slice(json_str(&info.api_version()).as_bytes());
    out.put_slice(b",\"kind\":");
    out.put_slice(json_str(&info.list_kind()).as_bytes());
    out.put_slice(b",\"metadata\":{\"resourceVersion\":");
    out.put_slice(json_str(&list.resource_version).as_bytes());
    if let Some(c) = &list.continue_token {
        out.put_slice(b",\"continue\":");
        out.put_slice(json_str(c).as_bytes());
    }
    if let Some(n) = list.remaining_item_count {
        out.put_slice(format!(",\"remainingItemCount\":{n}").as_bytes());
    }
    out.put_slice(b"},\"items\":[");
    out.freeze()
}

/// The JSON of a list, assembled from the serialized items without encoding them again, and
/// written a piece at a time as it is sent ([`ListBody`]).
fn list_json_body(info: &ResourceInfo, list: ObjectList) -> ListBody {
    let opening = list_opening(info, &list);
    ListBody::new(opening, list.into_list_items(), LIST_CLOSING)
}

fn json_str(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into())
}

/// A list in the negotiated form.
pub fn list(
    output: &Output,
    info: &ResourceInfo,
    mut list: ObjectList,
) -> Result<Response<Body>, ApiError> {
    Ok(match output {
        Output::Json => raw(
            StatusCode::OK,
            "application/json",
            Body::new(list_json_body(info, list)),
        ),
        Output::Yaml => raw(
            StatusCode::OK,
            "application/yaml",
            yaml(&parse(&list_json_body(info, list).into_bytes())?)?,
        ),
        Output::Table { include_object } => {
            let items = list
                .items_mut()
                .iter()
                .map(|i| parse(i))
                .collect::<Result<Vec<_>, _>>()?;
            let t = table::table(
                info,
                &items,
                &list.resource_version,
                list.continue_token.as_deref(),
                list.remaining_item_count,
                *include_object,
                true,
            );
            raw(
                StatusCode::OK,
                "application/json",
                serde_json::to_vec(&t).map_err(ApiError::internal)?,
            )
        }
        Output::PartialObjectMetadata => {
            return Err(crate::endpoints::negotiation::partial_metadata_mismatch(
                info, false,
            ));
        }
        Output::PartialObjectMetadataList => {
            let items = list
                .items_mut()
                .iter()
                .map(|i| parse(i))
                .collect::<Result<Vec<_>, _>>()?;
            let p = table::partial_object_metadata_list(
                &items,
                &list.resource_version,
                list.continue_token.as_deref(),
                list.remaining_item_count,
            );
            raw(
                StatusCode::OK,
                "application/json",
                serde_json::to_vec(&p).map_err(ApiError::internal)?,
            )
        }
    })
}

/// A Status (success or failure) in JSON or YAML.
pub fn status(code: StatusCode, output: &Output, status: &crate::error::Status) -> Response<Body> {
    match output {
        Output::Yaml => {
            let v = serde_json::to_value(status).unwrap_or_default();
            raw(code, "application/yaml", yaml(&v).unwrap_or_default())
        }
        _ => raw(
            code,
            "application/json",
            serde_json::to_vec(status).unwrap_or_default(),
        ),
    }
}

/// An error as a Status in the negotiated form, with `Retry-After` when the error asks for it.
pub fn error(output: &Output, e: &ApiError) -> Response<Body> {
    let code = StatusCode::from_u16(e.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut res = status(code, output, &e.status());
    if let Some(secs) = e.details.as_ref().map(|d| d.retry_after_seconds)
        && secs > 0
    {
        res.headers_mut().insert(header::RETRY_AFTER, secs.into());
    }
    res
}

/// An [`ApiError`] returned from an axum handler answers its Status as JSON.
impl axum::response::IntoResponse for ApiError {
    fn into_response(self) -> axum::response::Response {
        error(&Output::Json, &self)
    }
}

/// Encodes one watch event object for the negotiated output. `first` is whether this is the
/// first event of the stream (Table events carry column definitions only then).
pub fn watch_object(
    output: &Output,
    info: &ResourceInfo,
    object: &Bytes,
    kind: WatchEventType,
    first: bool,
) -> Bytes {
    if kind == WatchEventType::Error {
        return object.clone();
    }
    match output {
        Output::Json | Output::Yaml => object.clone(),
        Output::Table { include_object } => {
            let Ok(v) = serde_json::from_slice::<Value>(object) else {
                return object.clone();
            };
            let rv = v
                .pointer("/metadata/resourceVersion")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            // A bookmark is a Table without rows that carries the resourceVersion.
            let objects = if kind == WatchEventType::Bookmark {
                Vec::new()
            } else {
                vec![v]
            };
            let t = table::table(info, &objects, &rv, None, None, *include_object, first);
            Bytes::from(serde_json::to_vec(&t).unwrap_or_default())
        }
        Output::PartialObjectMetadata | Output::PartialObjectMetadataList => {
            let Ok(v) = serde_json::from_slice::<Value>(object) else {
                return object.clone();
            };
            Bytes::from(
                serde_json::to_vec(&table::partial_object_metadata(&v, table::META_V1))
                    .unwrap_or_default(),
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use http_body_util::BodyExt;

    use super::*;
    use crate::registry::rest::RestStorage;
    use crate::registry::rest::options::{ListOptions, WriteOptions};
    use crate::registry::store::fixture::{self, Widget};
    use crate::resource::ApiResource;

    /// The JSON of a list in one buffer.
    fn list_json(info: &ResourceInfo, list: &ObjectList) -> Bytes {
        list_json_body(info, list.clone()).into_bytes()
    }

    /// The body as sent, and the length it announced.
    async fn sent(body: Body) -> (Vec<u8>, Option<u64>) {
        let length = http_body::Body::size_hint(&body).exact();
        (body.collect().await.unwrap().to_bytes().to_vec(), length)
    }

    #[tokio::test]
    async fn a_json_list_sends_the_same_bytes_written_now_or_as_sent() {
        let (store, _) = fixture::store();
        let ctx = fixture::ctx();
        for (name, color) in [("a", "red"), ("b", "blue"), ("c", "red")] {
            let body = fixture::body(&Widget::new(name, color));
            store
                .create(&ctx, body, &WriteOptions::default())
                .await
                .unwrap();
        }
        let info = Widget::resource_info();
        let opts = ListOptions {
            limit: 2,
            ..Default::default()
        };
        let list = store.list(&ctx, &opts).await.unwrap();
        assert!(list.continue_token.is_some());
        let whole = list_json(&info, &list);
        let parsed: Value = serde_json::from_slice(&whole).unwrap();
        assert_eq!(parsed["items"].as_array().unwrap().len(), 2);
        assert_eq!(parsed["metadata"]["remainingItemCount"], 1);
        assert_eq!(
            parsed["metadata"]["continue"],
            list.continue_token.as_deref().unwrap()
        );
        for (i, item) in list.clone().into_items().iter().enumerate() {
            assert_eq!(
                parsed["items"][i],
                serde_json::from_slice::<Value>(item).unwrap()
            );
        }
        let json = |list: ObjectList| {
            let response = super::list(&Output::Json, &info, list).unwrap();
            sent(response.into_body())
        };
        assert_eq!(
            json(list.clone()).await,
            (whole.to_vec(), Some(whole.len() as u64))
        );
        // Items read (so written) and changed: sent the same way as they now are.
        let mut changed = list.clone();
        changed.items_mut().reverse();
        let whole = list_json(&info, &changed);
        let parsed: Value = serde_json::from_slice(&whole).unwrap();
        assert_eq!(parsed["items"][0]["metadata"]["name"], "b");
        assert_eq!(
            json(changed).await,
            (whole.to_vec(), Some(whole.len() as u64))
        );
        // An empty list.
        let empty = ObjectList::default();
        let whole = list_json(&info, &empty);
        assert_eq!(
            serde_json::from_slice::<Value>(&whole).unwrap()["items"],
            serde_json::json!([])
        );
        assert_eq!(json(empty).await.0, whole.to_vec());
    }
}
