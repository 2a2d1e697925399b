//! The Swagger 2.0 document in its protobuf form (`application/com.github.proto-openapi.spec.v2.v1.0+protobuf`):
//! gnostic's `openapi.v2.Document`, which client-go's `OpenAPISchema()` asks for (kubectl 1.28
//! and older validate `create`/`apply` and run `explain` with it, and accept nothing else).
//!
//! The messages are declared with prost's derive from the fields of gnostic-models'
//! `OpenAPIv2.proto` that Kubernetes documents use (no protoc); [`v2_protobuf`] maps the JSON
//! document onto them as gnostic's own reader does: `x-` keys become vendor extensions whose
//! values (like `enum` and `default` values) are carried as YAML text (JSON, a subset of YAML),
//! and a parameter becomes a body parameter or a query, path or header one by its `in`.

use prost::Message;
use serde_json::{Map, Value};

/// The media type of the protobuf document, as it is answered (Go's `mime` package, which
/// client-go reads the answer's `Content-Type` with, refuses the `@` of the other spelling).
pub const V2_PROTOBUF: &str = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";
/// The spelling of [`V2_PROTOBUF`] client-go asks for in `Accept`.
pub const V2_PROTOBUF_AT: &str = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf";

#[derive(Clone, PartialEq, Message)]
struct Document {
    #[prost(string, tag = "1")]
    swagger: String,
    #[prost(message, optional, tag = "2")]
    info: Option<Info>,
    #[prost(string, tag = "3")]
    host: String,
    #[prost(string, tag = "4")]
    base_path: String,
    #[prost(string, repeated, tag = "5")]
    schemes: Vec<String>,
    #[prost(string, repeated, tag = "6")]
    consumes: Vec<String>,
    #[prost(string, repeated, tag = "7")]
    produces: Vec<String>,
    #[prost(message, optional, tag = "8")]
    paths: Option<Paths>,
    #[prost(message, optional, tag = "9")]
    definitions: Option<Definitions>,
    #[prost(message, repeated, tag = "12")]
    security: Vec<SecurityRequirement>,
    #[prost(message, optional, tag = "13")]
    security_definitions: Option<SecurityDefinitions>,
    #[prost(message, repeated, tag = "16")]
    vendor_extension: Vec<NamedAny>,
}

#[derive(Clone, PartialEq, Message)]
struct Info {
    #[prost(string, tag = "1")]
    title: String,
    #[prost(string, tag = "2")]
    version: String,
    #[prost(string, tag = "3")]
    description: String,
    #[prost(message, repeated, tag = "7")]
    vendor_extension: Vec<NamedAny>,
}

#[derive(Clone, PartialEq, Message)]
struct Paths {
    #[prost(message, repeated, tag = "1")]
    vendor_extension: Vec<NamedAny>,
    #[prost(message, repeated, tag = "2")]
    path: Vec<NamedPathItem>,
}

#[derive(Clone, PartialEq, Message)]
struct NamedPathItem {
    #[prost(string, tag = "1")]
    name: String,
    #[prost(message, optional, tag = "2")]
    value: Option<PathItem>,
}

#[derive(Clone, PartialEq, Message)]
struct PathItem {
    #[prost(string, tag = "1")]
    r#ref: String,
    #[prost(message, optional, tag = "2")]
    get: Option<Operation>,
    #[prost(message, optional, tag = "3")]
    put: Option<Operation>,
    #[prost(message, optional, tag = "4")]
    post: Option<Operation>,
    #[prost(message, optional, tag = "5")]
    delete: Option<Operation>,
    #[prost(message, optional, tag = "6")]
    options: Option<Operation>,
    #[prost(message, optional, tag = "7")]
    head: Option<Operation>,
    #[prost(message, optional, tag = "8")]
    patch: Option<Operation>,
    #[prost(message, repeated, tag = "9")]
    parameters: Vec<ParametersItem>,
    #[prost(message, repeated, tag = "10")]
    vendor_extension: Vec<NamedAny>,
}

#[derive(Clone, PartialEq, Message)]
struct Operation {
    #[prost(string, repeated, tag = "1")]
    tags: Vec<String>,
    #[prost(string, tag = "2")]
    summary: String,
    #[prost(string, tag = "3")]
    description: String,
    #[prost(string, tag = "5")]
    operation_id: String,
    #[prost(string, repeated, tag = "6")]
    produces: Vec<String>,
    #[prost(string, repeated, tag = "7")]
    consumes: Vec<String>,
    #[prost(message, repeated, tag = "8")]
    parameters: Vec<ParametersItem>,
    #[prost(message, optional, tag = "9")]
    responses: Option<Responses>,
    #[prost(string, repeated, tag = "10")]
    schemes: Vec<String>,
    #[prost(bool, tag = "11")]
    deprecated: bool,
    #[prost(message, repeated, tag = "13")]
    vendor_extension: Vec<NamedAny>,
}

#[derive(Clone, PartialEq, Message)]
struct ParametersItem {
    #[prost(oneof = "parameters_item::Oneof", tags = "1, 2")]
    oneof: Option<parameters_item::Oneof>,
}

// The short-lived messages of one encoding hold their oneofs by value, as prost declares them.
#[allow(clippy::large_enum_variant)]
mod parameters_item {
    /// A parameter or a reference to one.
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub(super) enum Oneof {
        #[prost(message, tag = "1")]
        Parameter(super::Parameter),
        #[prost(message, tag = "2")]
        JsonReference(super::JsonReference),
    }
}

#[derive(Clone, PartialEq, Message)]
struct Parameter {
    #[prost(oneof = "parameter::Oneof", tags = "1, 2")]
    oneof: Option<parameter::Oneof>,
}

// The short-lived messages of one encoding hold their oneofs by value, as prost declares them.
#[allow(clippy::large_enum_variant)]
mod parameter {
    /// A body parameter or another one.
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub(super) enum Oneof {
        #[prost(message, tag = "1")]
        BodyParameter(super::BodyParameter),
        #[prost(message, tag = "2")]
        NonBodyParameter(super::NonBodyParameter),
    }
}

#[derive(Clone, PartialEq, Message)]
struct BodyParameter {
    #[prost(string, tag = "1")]
    description: String,
    #[prost(string, tag = "2")]
    name: String,
    #[prost(string, tag = "3")]
    r#in: String,
    #[prost(bool, tag = "4")]
    required: bool,
    #[prost(message, optional, tag = "5")]
    schema: Option<Schema>,
    #[prost(message, repeated, tag = "6")]
    vendor_extension: Vec<NamedAny>,
}

#[derive(Clone, PartialEq, Message)]
struct NonBodyParameter {
    #[prost(oneof = "non_body_parameter::Oneof", tags = "1, 3, 4")]
    oneof: Option<non_body_parameter::Oneof>,
}

mod non_body_parameter {
    /// A header, query or path parameter.
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub(super) enum Oneof {
        #[prost(message, tag = "1")]
        Header(super::SimpleParameter),
        #[prost(message, tag = "3")]
        Query(super::QueryParameter),
        #[prost(message, tag = "4")]
        Path(super::SimpleParameter),
    }
}

/// `QueryParameterSubSchema` (the fields Kubernetes documents use).
#[derive(Clone, PartialEq, Message)]
struct QueryParameter {
    #[prost(bool, tag = "1")]
    required: bool,
    #[prost(string, tag = "2")]
    r#in: String,
    #[prost(string, tag = "3")]
    description: String,
    #[prost(string, tag = "4")]
    name: String,
    #[prost(string, tag = "6")]
    r#type: String,
    #[prost(string, tag = "7")]
    format: String,
    #[prost(bool, tag = "20")]
    unique_items: bool,
    #[prost(message, repeated, tag = "23")]
    vendor_extension: Vec<NamedAny>,
}

impl From<SimpleParameter> for QueryParameter {
    /// The same fields, at a query parameter's tags.
    fn from(p: SimpleParameter) -> Self {
        QueryParameter {
            required: p.required,
            r#in: p.r#in,
            description: p.description,
            name: p.name,
            r#type: p.r#type,
            format: p.format,
            unique_items: p.unique_items,
            vendor_extension: p.vendor_extension,
        }
    }
}

/// `HeaderParameterSubSchema` and `PathParameterSubSchema` (the same fields).
#[derive(Clone, PartialEq, Message)]
struct SimpleParameter {
    #[prost(bool, tag = "1")]
    required: bool,
    #[prost(string, tag = "2")]
    r#in: String,
    #[prost(string, tag = "3")]
    description: String,
    #[prost(string, tag = "4")]
    name: String,
    #[prost(string, tag = "5")]
    r#type: String,
    #[prost(string, tag = "6")]
    format: String,
    #[prost(bool, tag = "19")]
    unique_items: bool,
    #[prost(message, repeated, tag = "22")]
    vendor_extension: Vec<NamedAny>,
}

#[derive(Clone, PartialEq, Message)]
struct Responses {
    #[prost(message, repeated, tag = "1")]
    response_code: Vec<NamedResponseValue>,
    #[prost(message, repeated, tag = "2")]
    vendor_extension: Vec<NamedAny>,
}

#[derive(Clone, PartialEq, Message)]
struct NamedResponseValue {
    #[prost(string, tag = "1")]
    name: String,
    #[prost(message, optional, tag = "2")]
    value: Option<ResponseValue>,
}

#[derive(Clone, PartialEq, Message)]
struct ResponseValue {
    #[prost(oneof = "response_value::Oneof", tags = "1, 2")]
    oneof: Option<response_value::Oneof>,
}

// The short-lived messages of one encoding hold their oneofs by value, as prost declares them.
#[allow(clippy::large_enum_variant)]
mod response_value {
    /// A response or a reference to one.
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub(super) enum Oneof {
        #[prost(message, tag = "1")]
        Response(super::Response),
        #[prost(message, tag = "2")]
        JsonReference(super::JsonReference),
    }
}

#[derive(Clone, PartialEq, Message)]
struct Response {
    #[prost(string, tag = "1")]
    description: String,
    #[prost(message, optional, tag = "2")]
    schema: Option<SchemaItem>,
    #[prost(message, repeated, tag = "5")]
    vendor_extension: Vec<NamedAny>,
}

/// `SchemaItem` with its `schema` case (Kubernetes documents have no file schemas).
#[derive(Clone, PartialEq, Message)]
struct SchemaItem {
    #[prost(message, optional, tag = "1")]
    schema: Option<Schema>,
}

#[derive(Clone, PartialEq, Message)]
struct JsonReference {
    #[prost(string, tag = "1")]
    r#ref: String,
    #[prost(string, tag = "2")]
    description: String,
}

#[derive(Clone, PartialEq, Message)]
struct Schema {
    #[prost(string, tag = "1")]
    r#ref: String,
    #[prost(string, tag = "2")]
    format: String,
    #[prost(string, tag = "3")]
    title: String,
    #[prost(string, tag = "4")]
    description: String,
    #[prost(message, optional, tag = "5")]
    default: Option<Any>,
    #[prost(double, tag = "6")]
    multiple_of: f64,
    #[prost(double, tag = "7")]
    maximum: f64,
    #[prost(bool, tag = "8")]
    exclusive_maximum: bool,
    #[prost(double, tag = "9")]
    minimum: f64,
    #[prost(bool, tag = "10")]
    exclusive_minimum: bool,
    #[prost(int64, tag = "11")]
    max_length: i64,
    #[prost(int64, tag = "12")]
    min_length: i64,
    #[prost(string, tag = "13")]
    pattern: String,
    #[prost(int64, tag = "14")]
    max_items: i64,
    #[prost(int64, tag = "15")]
    min_items: i64,
    #[prost(bool, tag = "16")]
    unique_items: bool,
    #[prost(int64, tag = "17")]
    max_properties: i64,
    #[prost(int64, tag = "18")]
    min_properties: i64,
    #[prost(string, repeated, tag = "19")]
    required: Vec<String>,
    #[prost(message, repeated, tag = "20")]
    r#enum: Vec<Any>,
    #[prost(message, optional, boxed, tag = "21")]
    additional_properties: Option<Box<AdditionalPropertiesItem>>,
    #[prost(message, optional, tag = "22")]
    r#type: Option<TypeItem>,
    #[prost(message, optional, tag = "23")]
    items: Option<ItemsItem>,
    #[prost(message, repeated, tag = "24")]
    all_of: Vec<Schema>,
    #[prost(message, optional, tag = "25")]
    properties: Option<Properties>,
    #[prost(string, tag = "26")]
    discriminator: String,
    #[prost(bool, tag = "27")]
    read_only: bool,
    #[prost(message, optional, tag = "30")]
    example: Option<Any>,
    #[prost(message, repeated, tag = "31")]
    vendor_extension: Vec<NamedAny>,
}

#[derive(Clone, PartialEq, Message)]
struct TypeItem {
    #[prost(string, repeated, tag = "1")]
    value: Vec<String>,
}

#[derive(Clone, PartialEq, Message)]
struct ItemsItem {
    #[prost(message, repeated, tag = "1")]
    schema: Vec<Schema>,
}

#[derive(Clone, PartialEq, Message)]
struct Properties {
    #[prost(message, repeated, tag = "1")]
    additional_properties: Vec<NamedSchema>,
}

#[derive(Clone, PartialEq, Message)]
struct NamedSchema {
    #[prost(string, tag = "1")]
    name: String,
    #[prost(message, optional, tag = "2")]
    value: Option<Schema>,
}

#[derive(Clone, PartialEq, Message)]
struct AdditionalPropertiesItem {
    #[prost(oneof = "additional_properties_item::Oneof", tags = "1, 2")]
    oneof: Option<additional_properties_item::Oneof>,
}

// The short-lived messages of one encoding hold their oneofs by value, as prost declares them.
#[allow(clippy::large_enum_variant)]
mod additional_properties_item {
    /// A schema for the values, or whether other properties are allowed.
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub(super) enum Oneof {
        #[prost(message, tag = "1")]
        Schema(super::Schema),
        #[prost(bool, tag = "2")]
        Boolean(bool),
    }
}

/// gnostic's `Any`: a value as YAML text.
#[derive(Clone, PartialEq, Message)]
struct Any {
    #[prost(string, tag = "2")]
    yaml: String,
}

#[derive(Clone, PartialEq, Message)]
struct NamedAny {
    #[prost(string, tag = "1")]
    name: String,
    #[prost(message, optional, tag = "2")]
    value: Option<Any>,
}

#[derive(Clone, PartialEq, Message)]
struct Definitions {
    #[prost(message, repeated, tag = "1")]
    additional_properties: Vec<NamedSchema>,
}

#[derive(Clone, PartialEq, Message)]
struct SecurityRequirement {
    #[prost(message, repeated, tag = "1")]
    additional_properties: Vec<NamedStringArray>,
}

#[derive(Clone, PartialEq, Message)]
struct NamedStringArray {
    #[prost(string, tag = "1")]
    name: String,
    #[prost(message, optional, tag = "2")]
    value: Option<StringArray>,
}

#[derive(Clone, PartialEq, Message)]
struct StringArray {
    #[prost(string, repeated, tag = "1")]
    value: Vec<String>,
}

#[derive(Clone, PartialEq, Message)]
struct SecurityDefinitions {
    #[prost(message, repeated, tag = "1")]
    additional_properties: Vec<NamedSecurityDefinitionsItem>,
}

#[derive(Clone, PartialEq, Message)]
struct NamedSecurityDefinitionsItem {
    #[prost(string, tag = "1")]
    name: String,
    #[prost(message, optional, tag = "2")]
    value: Option<SecurityDefinitionsItem>,
}

/// `SecurityDefinitionsItem` with its `api_key_security` case (the bearer token Kubernetes
/// documents declare).
#[derive(Clone, PartialEq, Message)]
struct SecurityDefinitionsItem {
    #[prost(message, optional, tag = "2")]
    api_key_security: Option<ApiKeySecurity>,
}

#[derive(Clone, PartialEq, Message)]
struct ApiKeySecurity {
    #[prost(string, tag = "1")]
    r#type: String,
    #[prost(string, tag = "2")]
    name: String,
    #[prost(string, tag = "3")]
    r#in: String,
    #[prost(string, tag = "4")]
    description: String,
}

// ---------------------------------------------------------------------------------------------
// JSON → messages

fn text(v: &Value, key: &str) -> String {
    v.get(key).and_then(Value::as_str).unwrap_or("").to_string()
}

/// The strings of an array (other items skipped); nothing for another value.
fn strings(v: &Value) -> Vec<String> {
    each(Some(v), |s| s.as_str().map(str::to_string))
}

fn texts(v: &Value, key: &str) -> Vec<String> {
    v.get(key).map(strings).unwrap_or_default()
}

/// `f` of each item of an array (those it answers), in order; nothing for another value.
fn each<T>(v: Option<&Value>, f: impl FnMut(&Value) -> Option<T>) -> Vec<T> {
    v.and_then(Value::as_array)
        .map(|a| a.iter().filter_map(f).collect())
        .unwrap_or_default()
}

/// A `$ref` with its description.
fn reference(v: &Value) -> JsonReference {
    JsonReference {
        r#ref: text(v, "$ref"),
        description: text(v, "description"),
    }
}

fn flag(v: &Value, key: &str) -> bool {
    v.get(key).and_then(Value::as_bool).unwrap_or(false)
}

fn number(v: &Value, key: &str) -> f64 {
    v.get(key).and_then(Value::as_f64).unwrap_or(0.0)
}

fn integer(v: &Value, key: &str) -> i64 {
    v.get(key).and_then(Value::as_i64).unwrap_or(0)
}

/// A value as gnostic carries it: YAML text (here JSON, which YAML parsers read).
fn any(v: &Value) -> Any {
    Any {
        yaml: v.to_string(),
    }
}

/// The `x-` keys of an object, in the document's order.
fn extensions(v: &Value) -> Vec<NamedAny> {
    v.as_object()
        .map(|m| {
            m.iter()
                .filter(|(k, _)| k.starts_with("x-"))
                .map(|(k, v)| NamedAny {
                    name: k.clone(),
                    value: Some(any(v)),
                })
                .collect()
        })
        .unwrap_or_default()
}

fn named_schemas(v: Option<&Value>) -> Vec<NamedSchema> {
    v.and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(name, s)| NamedSchema {
                    name: name.clone(),
                    value: Some(schema(s)),
                })
                .collect()
        })
        .unwrap_or_default()
}

fn schema(v: &Value) -> Schema {
    let type_item = match v.get("type") {
        Some(Value::String(t)) => Some(TypeItem {
            value: vec![t.clone()],
        }),
        Some(ts @ Value::Array(_)) => Some(TypeItem { value: strings(ts) }),
        _ => None,
    };
    let items = match v.get("items") {
        Some(Value::Array(a)) => Some(ItemsItem {
            schema: a.iter().map(schema).collect(),
        }),
        Some(s @ Value::Object(_)) => Some(ItemsItem {
            schema: vec![schema(s)],
        }),
        _ => None,
    };
    let additional_properties = match v.get("additionalProperties") {
        Some(Value::Bool(b)) => Some(additional_properties_item::Oneof::Boolean(*b)),
        Some(s @ Value::Object(_)) => Some(additional_properties_item::Oneof::Schema(schema(s))),
        _ => None,
    }
    .map(|oneof| Box::new(AdditionalPropertiesItem { oneof: Some(oneof) }));
    Schema {
        r#ref: text(v, "$ref"),
        format: text(v, "format"),
        title: text(v, "title"),
        description: text(v, "description"),
        default: v.get("default").map(any),
        multiple_of: number(v, "multipleOf"),
        maximum: number(v, "maximum"),
        exclusive_maximum: flag(v, "exclusiveMaximum"),
        minimum: number(v, "minimum"),
        exclusive_minimum: flag(v, "exclusiveMinimum"),
        max_length: integer(v, "maxLength"),
        min_length: integer(v, "minLength"),
        pattern: text(v, "pattern"),
        max_items: integer(v, "maxItems"),
        min_items: integer(v, "minItems"),
        unique_items: flag(v, "uniqueItems"),
        max_properties: integer(v, "maxProperties"),
        min_properties: integer(v, "minProperties"),
        required: texts(v, "required"),
        r#enum: each(v.get("enum"), |e| Some(any(e))),
        additional_properties,
        r#type: type_item,
        items,
        all_of: each(v.get("allOf"), |s| Some(schema(s))),
        properties: v.get("properties").map(|p| Properties {
            additional_properties: named_schemas(Some(p)),
        }),
        discriminator: text(v, "discriminator"),
        read_only: flag(v, "readOnly"),
        example: v.get("example").map(any),
        vendor_extension: extensions(v),
    }
}

fn parameter(v: &Value) -> ParametersItem {
    use non_body_parameter::Oneof as NonBody;
    let oneof = if v.get("$ref").is_some() {
        parameters_item::Oneof::JsonReference(reference(v))
    } else {
        let location = text(v, "in");
        let simple = || SimpleParameter {
            required: flag(v, "required"),
            r#in: location.clone(),
            description: text(v, "description"),
            name: text(v, "name"),
            r#type: text(v, "type"),
            format: text(v, "format"),
            unique_items: flag(v, "uniqueItems"),
            vendor_extension: extensions(v),
        };
        let param = match location.as_str() {
            "body" => parameter::Oneof::BodyParameter(BodyParameter {
                description: text(v, "description"),
                name: text(v, "name"),
                r#in: location.clone(),
                required: flag(v, "required"),
                schema: v.get("schema").map(schema),
                vendor_extension: extensions(v),
            }),
            "path" => parameter::Oneof::NonBodyParameter(NonBodyParameter {
                oneof: Some(NonBody::Path(simple())),
            }),
            "header" => parameter::Oneof::NonBodyParameter(NonBodyParameter {
                oneof: Some(NonBody::Header(simple())),
            }),
            _ => parameter::Oneof::NonBodyParameter(NonBodyParameter {
                oneof: Some(NonBody::Query(simple().into())),
            }),
        };
        parameters_item::Oneof::Parameter(Parameter { oneof: Some(param) })
    };
    ParametersItem { oneof: Some(oneof) }
}

fn parameters(v: &Value) -> Vec<ParametersItem> {
    each(v.get("parameters"), |p| Some(parameter(p)))
}

fn operation(v: &Value) -> Operation {
    let responses = v.get("responses").map(|r| Responses {
        response_code: r
            .as_object()
            .map(|m| {
                m.iter()
                    .filter(|(code, _)| !code.starts_with("x-"))
                    .map(|(code, r)| {
                        let value = if r.get("$ref").is_some() {
                            response_value::Oneof::JsonReference(reference(r))
                        } else {
                            response_value::Oneof::Response(Response {
                                description: text(r, "description"),
                                schema: r.get("schema").map(|s| SchemaItem {
                                    schema: Some(schema(s)),
                                }),
                                vendor_extension: extensions(r),
                            })
                        };
                        NamedResponseValue {
                            name: code.clone(),
                            value: Some(ResponseValue { oneof: Some(value) }),
                        }
                    })
                    .collect()
            })
            .unwrap_or_default(),
        vendor_extension: extensions(r),
    });
    Operation {
        tags: texts(v, "tags"),
        summary: text(v, "summary"),
        description: text(v, "description"),
        operation_id: text(v, "operationId"),
        produces: texts(v, "produces"),
        consumes: texts(v, "consumes"),
        parameters: parameters(v),
        responses,
        schemes: texts(v, "schemes"),
        deprecated: flag(v, "deprecated"),
        vendor_extension: extensions(v),
    }
}

fn path_item(v: &Value) -> PathItem {
    let op = |method: &str| v.get(method).map(operation);
    PathItem {
        r#ref: text(v, "$ref"),
        get: op("get"),
        put: op("put"),
        post: op("post"),
        delete: op("delete"),
        options: op("options"),
        head: op("head"),
        patch: op("patch"),
        parameters: parameters(v),
        vendor_extension: extensions(v),
    }
}

fn document(v: &Value) -> Document {
    let empty = Map::new();
    let paths = v.get("paths").and_then(Value::as_object).unwrap_or(&empty);
    Document {
        swagger: text(v, "swagger"),
        info: v.get("info").map(|i| Info {
            title: text(i, "title"),
            version: text(i, "version"),
            description: text(i, "description"),
            vendor_extension: extensions(i),
        }),
        host: text(v, "host"),
        base_path: text(v, "basePath"),
        schemes: texts(v, "schemes"),
        consumes: texts(v, "consumes"),
        produces: texts(v, "produces"),
        paths: Some(Paths {
            vendor_extension: Vec::new(),
            path: paths
                .iter()
                .filter(|(p, _)| !p.starts_with("x-"))
                .map(|(p, item)| NamedPathItem {
                    name: p.clone(),
                    value: Some(path_item(item)),
                })
                .collect(),
        }),
        definitions: v.get("definitions").map(|d| Definitions {
            additional_properties: named_schemas(Some(d)),
        }),
        security: each(v.get("security"), |req| {
            Some(SecurityRequirement {
                additional_properties: req
                    .as_object()
                    .map(|m| {
                        m.iter()
                            .map(|(name, scopes)| NamedStringArray {
                                name: name.clone(),
                                value: Some(StringArray {
                                    value: strings(scopes),
                                }),
                            })
                            .collect()
                    })
                    .unwrap_or_default(),
            })
        }),
        security_definitions: v
            .get("securityDefinitions")
            .and_then(Value::as_object)
            .map(|m| SecurityDefinitions {
                additional_properties: m
                    .iter()
                    .map(|(name, d)| NamedSecurityDefinitionsItem {
                        name: name.clone(),
                        value: Some(SecurityDefinitionsItem {
                            api_key_security: Some(ApiKeySecurity {
                                r#type: text(d, "type"),
                                name: text(d, "name"),
                                r#in: text(d, "in"),
                                description: text(d, "description"),
                            }),
                        }),
                    })
                    .collect(),
            }),
        vendor_extension: extensions(v),
    }
}

/// The protobuf encoding of a Swagger 2.0 document.
pub fn v2_protobuf(doc: &Value) -> Vec<u8> {
    document(doc).encode_to_vec()
}

/// Whether an `Accept` header prefers the protobuf document: its first media range that this
/// server can answer (the protobuf one, or JSON and its wildcards) is the protobuf one.
pub fn wants_v2_protobuf(accept: &str) -> bool {
    for range in accept.split(',') {
        let essence = range.split(';').next().unwrap_or("").trim();
        if essence.eq_ignore_ascii_case(V2_PROTOBUF) || essence.eq_ignore_ascii_case(V2_PROTOBUF_AT)
        {
            return true;
        }
        if matches!(essence, "application/json" | "*/*" | "application/*") {
            return false;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_document_round_trips_through_the_messages() {
        let doc = json!({
            "swagger": "2.0",
            "info": {"title": "wardle", "version": "v1.33.0"},
            "paths": {"/apis/g/v1/things/{name}": {
                "parameters": [{"name": "name", "in": "path", "required": true, "type": "string", "uniqueItems": true}],
                "get": {"operationId": "readThing", "tags": ["g_v1"], "produces": ["application/json"],
                        "parameters": [{"name": "pretty", "in": "query", "type": "string"}],
                        "responses": {"200": {"description": "OK", "schema": {"$ref": "#/definitions/g.v1.Thing"}}},
                        "x-kubernetes-action": "get",
                        "x-kubernetes-group-version-kind": {"group": "g", "version": "v1", "kind": "Thing"}},
                "put": {"parameters": [{"name": "body", "in": "body", "required": true, "schema": {"$ref": "#/definitions/g.v1.Thing"}}]},
            }},
            "definitions": {"g.v1.Thing": {
                "description": "A thing.",
                "type": "object",
                "required": ["spec"],
                "properties": {
                    "spec": {"type": "object", "properties": {
                        "size": {"type": "integer", "format": "int32", "description": "Size."},
                        "kind": {"type": "string", "enum": ["A", "B"]},
                        "tags": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"},
                        "labels": {"type": "object", "additionalProperties": {"type": "string"}}}},
                },
                "x-kubernetes-group-version-kind": [{"group": "g", "version": "v1", "kind": "Thing"}],
            }},
            "security": [{"BearerToken": []}],
            "securityDefinitions": {"BearerToken": {"type": "apiKey", "name": "authorization", "in": "header", "description": "Bearer"}},
        });
        let bytes = v2_protobuf(&doc);
        let back = Document::decode(bytes.as_slice()).unwrap();
        assert_eq!(back.swagger, "2.0");
        assert_eq!(back.info.as_ref().unwrap().title, "wardle");
        let thing = &back.definitions.as_ref().unwrap().additional_properties[0];
        assert_eq!(thing.name, "g.v1.Thing");
        let s = thing.value.as_ref().unwrap();
        assert_eq!(s.description, "A thing.");
        assert_eq!(s.r#type.as_ref().unwrap().value, ["object"]);
        assert_eq!(s.required, ["spec"]);
        assert_eq!(
            s.vendor_extension[0].name,
            "x-kubernetes-group-version-kind"
        );
        let gvk: Value =
            serde_yaml_ng::from_str(&s.vendor_extension[0].value.as_ref().unwrap().yaml).unwrap();
        assert_eq!(
            gvk,
            json!([{"group": "g", "version": "v1", "kind": "Thing"}])
        );
        let spec = &s.properties.as_ref().unwrap().additional_properties[0];
        let fields = &spec
            .value
            .as_ref()
            .unwrap()
            .properties
            .as_ref()
            .unwrap()
            .additional_properties;
        let field = |name: &str| {
            fields
                .iter()
                .find(|f| f.name == name)
                .unwrap()
                .value
                .clone()
                .unwrap()
        };
        assert_eq!(field("size").format, "int32");
        assert_eq!(field("kind").r#enum.len(), 2);
        assert_eq!(
            field("tags").items.as_ref().unwrap().schema[0]
                .r#type
                .as_ref()
                .unwrap()
                .value,
            ["string"]
        );
        let labels = field("labels");
        match labels.additional_properties.unwrap().oneof.unwrap() {
            additional_properties_item::Oneof::Schema(v) => {
                assert_eq!(v.r#type.unwrap().value, ["string"])
            }
            other => panic!("{other:?}"),
        }
        let path = &back.paths.as_ref().unwrap().path[0];
        assert_eq!(path.name, "/apis/g/v1/things/{name}");
        let item = path.value.as_ref().unwrap();
        let get = item.get.as_ref().unwrap();
        assert_eq!(get.operation_id, "readThing");
        assert_eq!(get.vendor_extension.len(), 2);
        let ok = &get.responses.as_ref().unwrap().response_code[0];
        assert_eq!(ok.name, "200");
        match item.parameters[0].oneof.as_ref().unwrap() {
            parameters_item::Oneof::Parameter(Parameter {
                oneof:
                    Some(parameter::Oneof::NonBodyParameter(NonBodyParameter {
                        oneof: Some(non_body_parameter::Oneof::Path(p)),
                    })),
            }) => assert!(p.required && p.unique_items && p.name == "name"),
            other => panic!("{other:?}"),
        }
        match item.put.as_ref().unwrap().parameters[0]
            .oneof
            .as_ref()
            .unwrap()
        {
            parameters_item::Oneof::Parameter(Parameter {
                oneof: Some(parameter::Oneof::BodyParameter(b)),
            }) => assert_eq!(b.schema.as_ref().unwrap().r#ref, "#/definitions/g.v1.Thing"),
            other => panic!("{other:?}"),
        }
        let key = &back.security_definitions.unwrap().additional_properties[0];
        assert_eq!(
            key.value
                .as_ref()
                .unwrap()
                .api_key_security
                .as_ref()
                .unwrap()
                .r#in,
            "header"
        );
        assert_eq!(
            back.security[0].additional_properties[0].name,
            "BearerToken"
        );
    }

    #[test]
    fn the_accept_header_decides() {
        assert!(wants_v2_protobuf(V2_PROTOBUF));
        assert!(wants_v2_protobuf(&format!(
            "{V2_PROTOBUF_AT}, application/json"
        )));
        assert!(!wants_v2_protobuf("application/json"));
        assert!(!wants_v2_protobuf(&format!(
            "application/json, {V2_PROTOBUF}"
        )));
        assert!(!wants_v2_protobuf(""));
        assert!(!wants_v2_protobuf("*/*"));
    }
}
