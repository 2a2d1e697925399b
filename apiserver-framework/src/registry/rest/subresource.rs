//! Custom subresources: what a resource serves at `<object>/<name>` besides `status` and
//! `scale`, as upstream's REST storages for subresources do.
//!
//! Three kinds, each a typed trait:
//! - [`GetterWithOptions`] (`GET …/flunders/x/describe?verbose=true`): typed options decoded
//!   from the query string, a typed answer — upstream's `rest.GetterWithOptions`;
//! - [`Action`] (`POST …/flunders/x/topping`): a typed body in, a typed object out —
//!   upstream's `rest.NamedCreater` on a subresource (`pods/eviction`, `pods/binding`);
//! - [`Connecter`] (`GET` or `POST …/flunders/x/console` with `Upgrade: websocket`): an
//!   upgraded, bidirectional [`ConnectStream`] — upstream's `rest.Connecter`
//!   (`pods/exec`, `pods/attach`).
//!
//! Register them with [`Group::subresource`](crate::registry::group::Group::subresource). Each
//! is authorized with its subresource set (`get` for reads and GET connects, `create` for
//! actions and POST connects), listed in discovery with its verbs, and documented in OpenAPI.

use std::sync::Arc;

use bytes::Bytes;
use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::error::ApiError;
use crate::registry::rest::RequestContext;
use crate::registry::rest::connect::ConnectStream;

/// What a custom subresource does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SubresourceKind {
    /// GET with typed options: verb `get`.
    GetWithOptions,
    /// POST of a typed body: verb `create`.
    Action,
    /// An upgraded connection opened with GET or POST: verbs `get` and `create`.
    Connect,
}

impl SubresourceKind {
    /// The verbs discovery lists for it (sorted).
    pub fn verbs(self) -> &'static [&'static str] {
        match self {
            SubresourceKind::GetWithOptions => &["get"],
            SubresourceKind::Action => &["create"],
            SubresourceKind::Connect => &["create", "get"],
        }
    }
}

/// A schema with the kind OpenAPI documents it as (in the resource's group and version).
#[derive(Clone, Debug)]
pub struct NamedSchema {
    /// The kind (e.g. `FlunderDescription`); its definition is named like the resource's.
    pub name: String,
    /// The structural OpenAPI v3 schema.
    pub schema: Arc<Value>,
}

/// The static description of a custom subresource: what discovery and OpenAPI show.
#[derive(Clone, Debug)]
pub struct SubresourceInfo {
    /// The subresource's name, the last path segment (`describe`).
    pub name: String,
    /// What it does.
    pub kind: SubresourceKind,
    /// The group of the kind it answers with (discovery's `responseKind`).
    pub response_group: String,
    /// The version of the kind it answers with.
    pub response_version: String,
    /// The kind it answers with (for a connect subresource, its options kind, as upstream's
    /// `pods/exec` lists `PodExecOptions`).
    pub response_kind: String,
    /// The options read from the query (documented as query parameters).
    pub options: Option<NamedSchema>,
    /// The request body of an action.
    pub body: Option<NamedSchema>,
    /// The response of a get or an action.
    pub response: Option<NamedSchema>,
    /// A one-line description for OpenAPI.
    pub description: String,
}

/// What the HTTP layer hands a custom subresource.
pub enum SubresourceCall {
    /// A GET: the query's `key=value` pairs.
    Get {
        /// The decoded query pairs, in order.
        query: Vec<(String, String)>,
    },
    /// A POST to an action: the decoded JSON body and the query.
    Create {
        /// The body.
        body: Value,
        /// `dryRun=All` was asked.
        dry_run: bool,
    },
    /// An upgrade: the query's pairs; the answer is the session to run on the stream.
    Connect {
        /// The decoded query pairs, in order.
        query: Vec<(String, String)>,
    },
}

/// The session of a connect subresource, run on the upgraded stream.
pub type Session = Box<dyn FnOnce(ConnectStream) -> BoxFuture<'static, ()> + Send>;

/// What a custom subresource answers.
pub enum SubresourceReply {
    /// A JSON object (200 for gets, 201 for actions).
    Object(Bytes),
    /// The session to run once the connection is upgraded.
    Session(Session),
}

/// A custom subresource with its types erased, as the HTTP layer calls it. Built from the typed
/// traits by [`Subresource`]'s constructors.
#[async_trait::async_trait]
pub trait CustomSubresource: Send + Sync + 'static {
    /// Its description.
    fn info(&self) -> &SubresourceInfo;

    /// Serves one call on the object `name`.
    async fn call(
        &self,
        ctx: &RequestContext,
        name: &str,
        call: SubresourceCall,
    ) -> Result<SubresourceReply, ApiError>;
}

/// A GET subresource with typed options, as upstream's `rest.GetterWithOptions`.
#[async_trait::async_trait]
pub trait GetterWithOptions: Send + Sync + 'static {
    /// The options, decoded from the query string as upstream decodes query parameters: each
    /// field by its JSON name; booleans are false for `false` and `0` (any case) and true for
    /// anything else; numbers that do not parse answer 400. Unknown parameters are ignored.
    type Options: DeserializeOwned + JsonSchema + Send;
    /// The answer: a Kubernetes object (with `kind` and `apiVersion`).
    type Output: Serialize + JsonSchema + Send;

    /// Reads the subresource of the object `name`.
    async fn get(
        &self,
        ctx: &RequestContext,
        name: &str,
        options: Self::Options,
    ) -> Result<Self::Output, ApiError>;
}

/// A POST subresource taking a typed body, as upstream's `rest.NamedCreater` on a subresource.
#[async_trait::async_trait]
pub trait Action: Send + Sync + 'static {
    /// The request body; a body that does not decode answers 400.
    type Input: DeserializeOwned + JsonSchema + Send;
    /// The answer (201 Created).
    type Output: Serialize + JsonSchema + Send;

    /// Runs the action on the object `name` (`dry_run`: change nothing).
    async fn call(
        &self,
        ctx: &RequestContext,
        name: &str,
        input: Self::Input,
        dry_run: bool,
    ) -> Result<Self::Output, ApiError>;
}

/// An upgraded-connection subresource, as upstream's `rest.Connecter`.
#[async_trait::async_trait]
pub trait Connecter: Send + Sync + 'static {
    /// The options, decoded from the query string as [`GetterWithOptions::Options`].
    type Options: DeserializeOwned + JsonSchema + Send;

    /// Checks the object and the options before the upgrade (an error answers as a Status and
    /// nothing is upgraded), and returns the session to run on the upgraded stream.
    async fn connect(
        &self,
        ctx: &RequestContext,
        name: &str,
        options: Self::Options,
    ) -> Result<Session, ApiError>;
}

/// Constructors of custom subresources from the typed traits.
pub struct Subresource;

/// The names and kinds a typed subresource is described with.
#[derive(Clone, Debug)]
pub struct SubresourceNames {
    /// The path segment.
    pub name: String,
    /// The kind of the answer (of the options, for a connect subresource).
    pub kind: String,
    /// The kind of an action's body (ignored for other kinds).
    pub body_kind: String,
    /// A one-line description.
    pub description: String,
}

impl SubresourceNames {
    /// `name` answering with `kind`.
    pub fn new(name: impl Into<String>, kind: impl Into<String>) -> Self {
        let kind = kind.into();
        SubresourceNames {
            name: name.into(),
            body_kind: kind.clone(),
            kind,
            description: String::new(),
        }
    }

    /// The kind of an action's body.
    pub fn body_kind(mut self, kind: impl Into<String>) -> Self {
        self.body_kind = kind.into();
        self
    }

    /// A one-line description for OpenAPI.
    pub fn description(mut self, text: impl Into<String>) -> Self {
        self.description = text.into();
        self
    }
}

/// The parts of a [`SubresourceInfo`] a registration fills in later: the resource's group and
/// version name the definitions.
fn info_of(
    names: &SubresourceNames,
    kind: SubresourceKind,
    options: Option<Value>,
    body: Option<Value>,
    response: Option<Value>,
) -> SubresourceInfo {
    let named = |kind: &str, schema: Value| NamedSchema {
        name: kind.to_string(),
        schema: Arc::new(schema),
    };
    SubresourceInfo {
        name: names.name.clone(),
        kind,
        response_group: String::new(),
        response_version: String::new(),
        response_kind: names.kind.clone(),
        options: options.map(|s| named(&names.kind, s)),
        body: body.map(|s| named(&names.body_kind, s)),
        response: response.map(|s| named(&names.kind, s)),
        description: names.description.clone(),
    }
}

impl Subresource {
    /// A GET-with-options subresource.
    pub fn getter<G: GetterWithOptions>(
        names: SubresourceNames,
        getter: G,
    ) -> Arc<dyn CustomSubresource> {
        let options = crate::schema::structural_schema_of::<G::Options>();
        let info = info_of(
            &names,
            SubresourceKind::GetWithOptions,
            Some(options.clone()),
            None,
            Some(crate::schema::structural_schema_of::<G::Output>()),
        );
        Arc::new(Typed {
            info,
            options,
            inner: GetterImpl(getter),
        })
    }

    /// An action subresource.
    pub fn action<A: Action>(names: SubresourceNames, action: A) -> Arc<dyn CustomSubresource> {
        let info = info_of(
            &names,
            SubresourceKind::Action,
            None,
            Some(crate::schema::structural_schema_of::<A::Input>()),
            Some(crate::schema::structural_schema_of::<A::Output>()),
        );
        Arc::new(Typed {
            info,
            options: Value::Null,
            inner: ActionImpl(action),
        })
    }

    /// A connect subresource.
    pub fn connecter<C: Connecter>(
        names: SubresourceNames,
        connecter: C,
    ) -> Arc<dyn CustomSubresource> {
        let options = crate::schema::structural_schema_of::<C::Options>();
        let info = info_of(
            &names,
            SubresourceKind::Connect,
            Some(options.clone()),
            None,
            None,
        );
        Arc::new(Typed {
            info,
            options,
            inner: ConnecterImpl(connecter),
        })
    }
}

/// A typed subresource behind [`CustomSubresource`].
struct Typed<I> {
    info: SubresourceInfo,
    /// The options' schema (for decoding the query).
    options: Value,
    inner: I,
}

struct GetterImpl<G>(G);
struct ActionImpl<A>(A);
struct ConnecterImpl<C>(C);

/// The erased call of one typed trait.
#[async_trait::async_trait]
trait Erased: Send + Sync + 'static {
    async fn call(
        &self,
        options_schema: &Value,
        ctx: &RequestContext,
        name: &str,
        call: SubresourceCall,
    ) -> Result<SubresourceReply, ApiError>;
}

fn to_json<T: Serialize>(value: &T) -> Result<Bytes, ApiError> {
    serde_json::to_vec(value)
        .map(Bytes::from)
        .map_err(ApiError::internal)
}

#[async_trait::async_trait]
impl<G: GetterWithOptions> Erased for GetterImpl<G> {
    async fn call(
        &self,
        options_schema: &Value,
        ctx: &RequestContext,
        name: &str,
        call: SubresourceCall,
    ) -> Result<SubresourceReply, ApiError> {
        let SubresourceCall::Get { query } = call else {
            return Err(ApiError::method_not_allowed());
        };
        let options = decode_options(options_schema, &query)?;
        let out = self.0.get(ctx, name, options).await?;
        Ok(SubresourceReply::Object(to_json(&out)?))
    }
}

#[async_trait::async_trait]
impl<A: Action> Erased for ActionImpl<A> {
    async fn call(
        &self,
        _options_schema: &Value,
        ctx: &RequestContext,
        name: &str,
        call: SubresourceCall,
    ) -> Result<SubresourceReply, ApiError> {
        let SubresourceCall::Create { body, dry_run } = call else {
            return Err(ApiError::method_not_allowed());
        };
        let input: A::Input = serde_json::from_value(body)
            .map_err(|e| ApiError::bad_request(format!("the request body is invalid: {e}")))?;
        let out = self.0.call(ctx, name, input, dry_run).await?;
        Ok(SubresourceReply::Object(to_json(&out)?))
    }
}

#[async_trait::async_trait]
impl<C: Connecter> Erased for ConnecterImpl<C> {
    async fn call(
        &self,
        options_schema: &Value,
        ctx: &RequestContext,
        name: &str,
        call: SubresourceCall,
    ) -> Result<SubresourceReply, ApiError> {
        let SubresourceCall::Connect { query } = call else {
            return Err(ApiError::method_not_allowed());
        };
        let options = decode_options(options_schema, &query)?;
        let session = self.0.connect(ctx, name, options).await?;
        Ok(SubresourceReply::Session(session))
    }
}

#[async_trait::async_trait]
impl<I: Erased> CustomSubresource for Typed<I> {
    fn info(&self) -> &SubresourceInfo {
        &self.info
    }

    async fn call(
        &self,
        ctx: &RequestContext,
        name: &str,
        call: SubresourceCall,
    ) -> Result<SubresourceReply, ApiError> {
        self.inner.call(&self.options, ctx, name, call).await
    }
}

/// Decodes typed options from query pairs, field by field as their schema says, the way
/// upstream's parameter codec converts `url.Values`: the first value of a scalar field, every
/// value of an array field; booleans are false only for `false` and `0` (any case); an integer
/// or number that does not parse answers 400 with Go's `strconv` message. Parameters the
/// options do not declare (`pretty`, …) are ignored.
pub(crate) fn decode_options<T: DeserializeOwned>(
    schema: &Value,
    query: &[(String, String)],
) -> Result<T, ApiError> {
    let properties = schema.get("properties").and_then(Value::as_object);
    let mut out = Map::new();
    if let Some(properties) = properties {
        for (field, field_schema) in properties {
            let values: Vec<&str> = query
                .iter()
                .filter(|(k, _)| k == field)
                .map(|(_, v)| v.as_str())
                .collect();
            let Some(first) = values.first() else {
                continue;
            };
            let value = match schema_type(field_schema) {
                Some("array") => {
                    let items = field_schema.get("items").unwrap_or(&Value::Null);
                    let converted = values
                        .iter()
                        .map(|v| scalar(items, v))
                        .collect::<Result<Vec<_>, _>>()?;
                    Value::Array(converted)
                }
                _ => scalar(field_schema, first)?,
            };
            out.insert(field.clone(), value);
        }
    }
    serde_json::from_value(Value::Object(out)).map_err(|e| ApiError::bad_request(e.to_string()))
}

/// The `type` of a schema.
fn schema_type(schema: &Value) -> Option<&str> {
    schema.get("type").and_then(Value::as_str)
}

/// One query value as its schema's scalar type.
fn scalar(schema: &Value, text: &str) -> Result<Value, ApiError> {
    Ok(match schema_type(schema) {
        Some("boolean") => Value::Bool(!(text == "0" || text.eq_ignore_ascii_case("false"))),
        Some("integer") => Value::from(parse_int(text)?),
        Some("number") => {
            let n: f64 = text.parse().map_err(|_| {
                ApiError::bad_request(format!(
                    "strconv.ParseFloat: parsing {}: invalid syntax",
                    crate::quote::go_quote(text)
                ))
            })?;
            serde_json::Number::from_f64(n)
                .map(Value::Number)
                .ok_or_else(|| {
                    ApiError::bad_request(format!(
                        "strconv.ParseFloat: parsing {}: invalid syntax",
                        crate::quote::go_quote(text)
                    ))
                })?
        }
        _ => Value::String(text.to_string()),
    })
}

/// An integer as Go's `strconv.ParseInt(text, 10, 64)` reads it, with its error messages.
fn parse_int(text: &str) -> Result<i64, ApiError> {
    let quoted = crate::quote::go_quote(text);
    let digits = text.strip_prefix(['+', '-']).unwrap_or(text);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(ApiError::bad_request(format!(
            "strconv.ParseInt: parsing {quoted}: invalid syntax"
        )));
    }
    text.parse().map_err(|_| {
        ApiError::bad_request(format!(
            "strconv.ParseInt: parsing {quoted}: value out of range"
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize, JsonSchema, Debug, PartialEq)]
    #[serde(rename_all = "camelCase")]
    struct Opts {
        #[serde(default)]
        verbose: bool,
        #[serde(default)]
        max_toppings: Option<i64>,
        #[serde(default)]
        names: Vec<String>,
        #[serde(default)]
        ratio: Option<f64>,
    }

    fn pairs(q: &[(&str, &str)]) -> Vec<(String, String)> {
        q.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn decode(q: &[(&str, &str)]) -> Result<Opts, ApiError> {
        decode_options(&crate::schema::structural_schema_of::<Opts>(), &pairs(q))
    }

    #[test]
    fn options_decode_like_upstreams_parameter_codec() {
        let o = decode(&[
            ("verbose", "yes"),
            ("maxToppings", "-3"),
            ("names", "a"),
            ("names", "b"),
            ("pretty", "true"),
            ("ratio", "0.5"),
        ])
        .unwrap();
        assert_eq!(
            o,
            Opts {
                verbose: true,
                max_toppings: Some(-3),
                names: vec!["a".into(), "b".into()],
                ratio: Some(0.5),
            }
        );
        for falsy in ["0", "false", "FALSE", "False"] {
            assert!(!decode(&[("verbose", falsy)]).unwrap().verbose, "{falsy}");
        }
        // An empty value is true, as upstream's conversion reads it.
        assert!(decode(&[("verbose", "")]).unwrap().verbose);
        assert_eq!(decode(&[]).unwrap().max_toppings, None);
    }

    #[test]
    fn bad_numbers_answer_400_with_gos_messages() {
        let e = decode(&[("maxToppings", "abc")]).unwrap_err();
        assert_eq!((e.code, e.reason.as_str()), (400, "BadRequest"));
        assert_eq!(
            e.message,
            r#"strconv.ParseInt: parsing "abc": invalid syntax"#
        );
        let e = decode(&[("maxToppings", "99999999999999999999")]).unwrap_err();
        assert_eq!(
            e.message,
            r#"strconv.ParseInt: parsing "99999999999999999999": value out of range"#
        );
        let e = decode(&[("maxToppings", "")]).unwrap_err();
        assert_eq!(e.message, r#"strconv.ParseInt: parsing "": invalid syntax"#);
        let e = decode(&[("ratio", "x")]).unwrap_err();
        assert_eq!(
            e.message,
            r#"strconv.ParseFloat: parsing "x": invalid syntax"#
        );
    }
}
