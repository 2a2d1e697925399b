//! The Swagger 2.0 document in its protobuf form (`application/com.github.proto-openapi.spec.v2.v1.0+protobuf`):
//! gnostic's `openapi.v2.Document`, which client-go's `OpenAPISchema()` asks for (kubectl 1.28
//! and older validate `create`/`apply` and run `explain` with it, and accept nothing else).
//!
//! The messages are declared with prost's derive from the fields of gnostic-models'
//! `OpenAPIv2.proto` that Kubernetes documents use (no protoc; `messages`); [`v2_protobuf`]
//! maps the JSON document onto them as gnostic's own reader does (`from_json`): `x-` keys
//! become vendor extensions whose values (like `enum` and `default` values) are carried as YAML
//! text (JSON, a subset of YAML), and a parameter becomes a body parameter or a query, path or
//! header one by its `in`.

mod from_json;
mod messages;

use prost::Message;
use serde_json::Value;

/// The media type of the protobuf document, as it is answered (Go's `mime` package, which
/// client-go reads the answer's `Content-Type` with, refuses the `@` of the other spelling).
pub const V2_PROTOBUF: &str = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";
/// The spelling of [`V2_PROTOBUF`] client-go asks for in `Accept`.
pub const V2_PROTOBUF_AT: &str = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf";

/// The protobuf encoding of a Swagger 2.0 document.
pub fn v2_protobuf(doc: &Value) -> Vec<u8> {
    from_json::document(doc).encode_to_vec()
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
    use super::messages::*;
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
