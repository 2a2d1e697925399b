//! The JSON document mapped onto the messages as gnostic's own reader does: `x-` keys become
//! vendor extensions whose values are carried as YAML text, and a parameter becomes a body
//! parameter or a query, path or header one by its `in`.

use serde_json::{Map, Value};

use super::messages::*;

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

pub(super) fn document(v: &Value) -> Document {
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
