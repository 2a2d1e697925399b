//! The messages of gnostic's `openapi.v2` (`OpenAPIv2.proto`), declared with prost's derive:
//! the fields Kubernetes documents use, with their tags.

use prost::Message;

#[derive(Clone, PartialEq, Message)]
pub(super) struct Document {
    #[prost(string, tag = "1")]
    pub(super) swagger: String,
    #[prost(message, optional, tag = "2")]
    pub(super) info: Option<Info>,
    #[prost(string, tag = "3")]
    pub(super) host: String,
    #[prost(string, tag = "4")]
    pub(super) base_path: String,
    #[prost(string, repeated, tag = "5")]
    pub(super) schemes: Vec<String>,
    #[prost(string, repeated, tag = "6")]
    pub(super) consumes: Vec<String>,
    #[prost(string, repeated, tag = "7")]
    pub(super) produces: Vec<String>,
    #[prost(message, optional, tag = "8")]
    pub(super) paths: Option<Paths>,
    #[prost(message, optional, tag = "9")]
    pub(super) definitions: Option<Definitions>,
    #[prost(message, repeated, tag = "12")]
    pub(super) security: Vec<SecurityRequirement>,
    #[prost(message, optional, tag = "13")]
    pub(super) security_definitions: Option<SecurityDefinitions>,
    #[prost(message, repeated, tag = "16")]
    pub(super) vendor_extension: Vec<NamedAny>,
}

#[derive(Clone, PartialEq, Message)]
pub(super) struct Info {
    #[prost(string, tag = "1")]
    pub(super) title: String,
    #[prost(string, tag = "2")]
    pub(super) version: String,
    #[prost(string, tag = "3")]
    pub(super) description: String,
    #[prost(message, repeated, tag = "7")]
    pub(super) vendor_extension: Vec<NamedAny>,
}

#[derive(Clone, PartialEq, Message)]
pub(super) struct Paths {
    #[prost(message, repeated, tag = "1")]
    pub(super) vendor_extension: Vec<NamedAny>,
    #[prost(message, repeated, tag = "2")]
    pub(super) path: Vec<NamedPathItem>,
}

#[derive(Clone, PartialEq, Message)]
pub(super) struct NamedPathItem {
    #[prost(string, tag = "1")]
    pub(super) name: String,
    #[prost(message, optional, tag = "2")]
    pub(super) value: Option<PathItem>,
}

#[derive(Clone, PartialEq, Message)]
pub(super) struct PathItem {
    #[prost(string, tag = "1")]
    pub(super) r#ref: String,
    #[prost(message, optional, tag = "2")]
    pub(super) get: Option<Operation>,
    #[prost(message, optional, tag = "3")]
    pub(super) put: Option<Operation>,
    #[prost(message, optional, tag = "4")]
    pub(super) post: Option<Operation>,
    #[prost(message, optional, tag = "5")]
    pub(super) delete: Option<Operation>,
    #[prost(message, optional, tag = "6")]
    pub(super) options: Option<Operation>,
    #[prost(message, optional, tag = "7")]
    pub(super) head: Option<Operation>,
    #[prost(message, optional, tag = "8")]
    pub(super) patch: Option<Operation>,
    #[prost(message, repeated, tag = "9")]
    pub(super) parameters: Vec<ParametersItem>,
    #[prost(message, repeated, tag = "10")]
    pub(super) vendor_extension: Vec<NamedAny>,
}

#[derive(Clone, PartialEq, Message)]
pub(super) struct Operation {
    #[prost(string, repeated, tag = "1")]
    pub(super) tags: Vec<String>,
    #[prost(string, tag = "2")]
    pub(super) summary: String,
    #[prost(string, tag = "3")]
    pub(super) description: String,
    #[prost(string, tag = "5")]
    pub(super) operation_id: String,
    #[prost(string, repeated, tag = "6")]
    pub(super) produces: Vec<String>,
    #[prost(string, repeated, tag = "7")]
    pub(super) consumes: Vec<String>,
    #[prost(message, repeated, tag = "8")]
    pub(super) parameters: Vec<ParametersItem>,
    #[prost(message, optional, tag = "9")]
    pub(super) responses: Option<Responses>,
    #[prost(string, repeated, tag = "10")]
    pub(super) schemes: Vec<String>,
    #[prost(bool, tag = "11")]
    pub(super) deprecated: bool,
    #[prost(message, repeated, tag = "13")]
    pub(super) vendor_extension: Vec<NamedAny>,
}

#[derive(Clone, PartialEq, Message)]
pub(super) struct ParametersItem {
    #[prost(oneof = "parameters_item::Oneof", tags = "1, 2")]
    pub(super) oneof: Option<parameters_item::Oneof>,
}

// The short-lived messages of one encoding hold their oneofs by value, as prost declares them.
#[allow(clippy::large_enum_variant)]
pub(super) mod parameters_item {
    /// A parameter or a reference to one.
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub(in crate::openapi::protobuf) enum Oneof {
        #[prost(message, tag = "1")]
        Parameter(super::Parameter),
        #[prost(message, tag = "2")]
        JsonReference(super::JsonReference),
    }
}

#[derive(Clone, PartialEq, Message)]
pub(super) struct Parameter {
    #[prost(oneof = "parameter::Oneof", tags = "1, 2")]
    pub(super) oneof: Option<parameter::Oneof>,
}

// The short-lived messages of one encoding hold their oneofs by value, as prost declares them.
#[allow(clippy::large_enum_variant)]
pub(super) mod parameter {
    /// A body parameter or another one.
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub(in crate::openapi::protobuf) enum Oneof {
        #[prost(message, tag = "1")]
        BodyParameter(super::BodyParameter),
        #[prost(message, tag = "2")]
        NonBodyParameter(super::NonBodyParameter),
    }
}

#[derive(Clone, PartialEq, Message)]
pub(super) struct BodyParameter {
    #[prost(string, tag = "1")]
    pub(super) description: String,
    #[prost(string, tag = "2")]
    pub(super) name: String,
    #[prost(string, tag = "3")]
    pub(super) r#in: String,
    #[prost(bool, tag = "4")]
    pub(super) required: bool,
    #[prost(message, optional, tag = "5")]
    pub(super) schema: Option<Schema>,
    #[prost(message, repeated, tag = "6")]
    pub(super) vendor_extension: Vec<NamedAny>,
}

#[derive(Clone, PartialEq, Message)]
pub(super) struct NonBodyParameter {
    #[prost(oneof = "non_body_parameter::Oneof", tags = "1, 3, 4")]
    pub(super) oneof: Option<non_body_parameter::Oneof>,
}

pub(super) mod non_body_parameter {
    /// A header, query or path parameter.
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub(in crate::openapi::protobuf) enum Oneof {
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
pub(super) struct QueryParameter {
    #[prost(bool, tag = "1")]
    pub(super) required: bool,
    #[prost(string, tag = "2")]
    pub(super) r#in: String,
    #[prost(string, tag = "3")]
    pub(super) description: String,
    #[prost(string, tag = "4")]
    pub(super) name: String,
    #[prost(string, tag = "6")]
    pub(super) r#type: String,
    #[prost(string, tag = "7")]
    pub(super) format: String,
    #[prost(bool, tag = "20")]
    pub(super) unique_items: bool,
    #[prost(message, repeated, tag = "23")]
    pub(super) vendor_extension: Vec<NamedAny>,
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
pub(super) struct SimpleParameter {
    #[prost(bool, tag = "1")]
    pub(super) required: bool,
    #[prost(string, tag = "2")]
    pub(super) r#in: String,
    #[prost(string, tag = "3")]
    pub(super) description: String,
    #[prost(string, tag = "4")]
    pub(super) name: String,
    #[prost(string, tag = "5")]
    pub(super) r#type: String,
    #[prost(string, tag = "6")]
    pub(super) format: String,
    #[prost(bool, tag = "19")]
    pub(super) unique_items: bool,
    #[prost(message, repeated, tag = "22")]
    pub(super) vendor_extension: Vec<NamedAny>,
}

#[derive(Clone, PartialEq, Message)]
pub(super) struct Responses {
    #[prost(message, repeated, tag = "1")]
    pub(super) response_code: Vec<NamedResponseValue>,
    #[prost(message, repeated, tag = "2")]
    pub(super) vendor_extension: Vec<NamedAny>,
}

#[derive(Clone, PartialEq, Message)]
pub(super) struct NamedResponseValue {
    #[prost(string, tag = "1")]
    pub(super) name: String,
    #[prost(message, optional, tag = "2")]
    pub(super) value: Option<ResponseValue>,
}

#[derive(Clone, PartialEq, Message)]
pub(super) struct ResponseValue {
    #[prost(oneof = "response_value::Oneof", tags = "1, 2")]
    pub(super) oneof: Option<response_value::Oneof>,
}

// The short-lived messages of one encoding hold their oneofs by value, as prost declares them.
#[allow(clippy::large_enum_variant)]
pub(super) mod response_value {
    /// A response or a reference to one.
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub(in crate::openapi::protobuf) enum Oneof {
        #[prost(message, tag = "1")]
        Response(super::Response),
        #[prost(message, tag = "2")]
        JsonReference(super::JsonReference),
    }
}

#[derive(Clone, PartialEq, Message)]
pub(super) struct Response {
    #[prost(string, tag = "1")]
    pub(super) description: String,
    #[prost(message, optional, tag = "2")]
    pub(super) schema: Option<SchemaItem>,
    #[prost(message, repeated, tag = "5")]
    pub(super) vendor_extension: Vec<NamedAny>,
}

/// `SchemaItem` with its `schema` case (Kubernetes documents have no file schemas).
#[derive(Clone, PartialEq, Message)]
pub(super) struct SchemaItem {
    #[prost(message, optional, tag = "1")]
    pub(super) schema: Option<Schema>,
}

#[derive(Clone, PartialEq, Message)]
pub(super) struct JsonReference {
    #[prost(string, tag = "1")]
    pub(super) r#ref: String,
    #[prost(string, tag = "2")]
    pub(super) description: String,
}

#[derive(Clone, PartialEq, Message)]
pub(super) struct Schema {
    #[prost(string, tag = "1")]
    pub(super) r#ref: String,
    #[prost(string, tag = "2")]
    pub(super) format: String,
    #[prost(string, tag = "3")]
    pub(super) title: String,
    #[prost(string, tag = "4")]
    pub(super) description: String,
    #[prost(message, optional, tag = "5")]
    pub(super) default: Option<Any>,
    #[prost(double, tag = "6")]
    pub(super) multiple_of: f64,
    #[prost(double, tag = "7")]
    pub(super) maximum: f64,
    #[prost(bool, tag = "8")]
    pub(super) exclusive_maximum: bool,
    #[prost(double, tag = "9")]
    pub(super) minimum: f64,
    #[prost(bool, tag = "10")]
    pub(super) exclusive_minimum: bool,
    #[prost(int64, tag = "11")]
    pub(super) max_length: i64,
    #[prost(int64, tag = "12")]
    pub(super) min_length: i64,
    #[prost(string, tag = "13")]
    pub(super) pattern: String,
    #[prost(int64, tag = "14")]
    pub(super) max_items: i64,
    #[prost(int64, tag = "15")]
    pub(super) min_items: i64,
    #[prost(bool, tag = "16")]
    pub(super) unique_items: bool,
    #[prost(int64, tag = "17")]
    pub(super) max_properties: i64,
    #[prost(int64, tag = "18")]
    pub(super) min_properties: i64,
    #[prost(string, repeated, tag = "19")]
    pub(super) required: Vec<String>,
    #[prost(message, repeated, tag = "20")]
    pub(super) r#enum: Vec<Any>,
    #[prost(message, optional, boxed, tag = "21")]
    pub(super) additional_properties: Option<Box<AdditionalPropertiesItem>>,
    #[prost(message, optional, tag = "22")]
    pub(super) r#type: Option<TypeItem>,
    #[prost(message, optional, tag = "23")]
    pub(super) items: Option<ItemsItem>,
    #[prost(message, repeated, tag = "24")]
    pub(super) all_of: Vec<Schema>,
    #[prost(message, optional, tag = "25")]
    pub(super) properties: Option<Properties>,
    #[prost(string, tag = "26")]
    pub(super) discriminator: String,
    #[prost(bool, tag = "27")]
    pub(super) read_only: bool,
    #[prost(message, optional, tag = "30")]
    pub(super) example: Option<Any>,
    #[prost(message, repeated, tag = "31")]
    pub(super) vendor_extension: Vec<NamedAny>,
}

#[derive(Clone, PartialEq, Message)]
pub(super) struct TypeItem {
    #[prost(string, repeated, tag = "1")]
    pub(super) value: Vec<String>,
}

#[derive(Clone, PartialEq, Message)]
pub(super) struct ItemsItem {
    #[prost(message, repeated, tag = "1")]
    pub(super) schema: Vec<Schema>,
}

#[derive(Clone, PartialEq, Message)]
pub(super) struct Properties {
    #[prost(message, repeated, tag = "1")]
    pub(super) additional_properties: Vec<NamedSchema>,
}

#[derive(Clone, PartialEq, Message)]
pub(super) struct NamedSchema {
    #[prost(string, tag = "1")]
    pub(super) name: String,
    #[prost(message, optional, tag = "2")]
    pub(super) value: Option<Schema>,
}

#[derive(Clone, PartialEq, Message)]
pub(super) struct AdditionalPropertiesItem {
    #[prost(oneof = "additional_properties_item::Oneof", tags = "1, 2")]
    pub(super) oneof: Option<additional_properties_item::Oneof>,
}

// The short-lived messages of one encoding hold their oneofs by value, as prost declares them.
#[allow(clippy::large_enum_variant)]
pub(super) mod additional_properties_item {
    /// A schema for the values, or whether other properties are allowed.
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub(in crate::openapi::protobuf) enum Oneof {
        #[prost(message, tag = "1")]
        Schema(super::Schema),
        #[prost(bool, tag = "2")]
        Boolean(bool),
    }
}

/// gnostic's `Any`: a value as YAML text.
#[derive(Clone, PartialEq, Message)]
pub(super) struct Any {
    #[prost(string, tag = "2")]
    pub(super) yaml: String,
}

#[derive(Clone, PartialEq, Message)]
pub(super) struct NamedAny {
    #[prost(string, tag = "1")]
    pub(super) name: String,
    #[prost(message, optional, tag = "2")]
    pub(super) value: Option<Any>,
}

#[derive(Clone, PartialEq, Message)]
pub(super) struct Definitions {
    #[prost(message, repeated, tag = "1")]
    pub(super) additional_properties: Vec<NamedSchema>,
}

#[derive(Clone, PartialEq, Message)]
pub(super) struct SecurityRequirement {
    #[prost(message, repeated, tag = "1")]
    pub(super) additional_properties: Vec<NamedStringArray>,
}

#[derive(Clone, PartialEq, Message)]
pub(super) struct NamedStringArray {
    #[prost(string, tag = "1")]
    pub(super) name: String,
    #[prost(message, optional, tag = "2")]
    pub(super) value: Option<StringArray>,
}

#[derive(Clone, PartialEq, Message)]
pub(super) struct StringArray {
    #[prost(string, repeated, tag = "1")]
    pub(super) value: Vec<String>,
}

#[derive(Clone, PartialEq, Message)]
pub(super) struct SecurityDefinitions {
    #[prost(message, repeated, tag = "1")]
    pub(super) additional_properties: Vec<NamedSecurityDefinitionsItem>,
}

#[derive(Clone, PartialEq, Message)]
pub(super) struct NamedSecurityDefinitionsItem {
    #[prost(string, tag = "1")]
    pub(super) name: String,
    #[prost(message, optional, tag = "2")]
    pub(super) value: Option<SecurityDefinitionsItem>,
}

/// `SecurityDefinitionsItem` with its `api_key_security` case (the bearer token Kubernetes
/// documents declare).
#[derive(Clone, PartialEq, Message)]
pub(super) struct SecurityDefinitionsItem {
    #[prost(message, optional, tag = "2")]
    pub(super) api_key_security: Option<ApiKeySecurity>,
}

#[derive(Clone, PartialEq, Message)]
pub(super) struct ApiKeySecurity {
    #[prost(string, tag = "1")]
    pub(super) r#type: String,
    #[prost(string, tag = "2")]
    pub(super) name: String,
    #[prost(string, tag = "3")]
    pub(super) r#in: String,
    #[prost(string, tag = "4")]
    pub(super) description: String,
}
