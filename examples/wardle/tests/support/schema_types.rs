//! Gadget: a resource whose schema constrains each kind of value and declares CEL rules with
//! the derive, for the schema validation tests (wardle's own types keep sample-apiserver's
//! schemas, which have neither).

use apiserver_framework::prelude::*;
use apiserver_framework::schema::Message;

/// A Gadget has a size within bounds, a short lower-case name, a mode, at most two tags, a note
/// that must start with `n` and a lock that cannot change once set.
#[derive(ApiResource, Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[resource(
    group = "schema.example.com",
    version = "v1",
    kind = "Gadget",
    namespaced,
    validation = Rule::new("self.spec.size <= self.spec.maxSize")
        .message("size must not exceed maxSize")
        .field_path(".spec.size")
)]
#[serde(rename_all = "camelCase")]
pub struct GadgetSpec {
    /// From 1 to 10.
    #[schemars(range(min = 1, max = 10))]
    pub size: i64,
    /// The largest size allowed.
    #[serde(default)]
    pub max_size: i64,
    /// 2 to 5 lower-case letters.
    #[schemars(length(min = 2, max = 5), regex(pattern = r"^[a-z]+$"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// `Open` or `Locked` (a string here, so that other values reach validation).
    #[schemars(extend("enum" = ["Open", "Locked"]))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// At most two, each once.
    #[schemars(length(max = 2))]
    #[resource(list_type = "set")]
    #[serde(default)]
    pub tags: Vec<String>,
    /// Starts with `n`; the message says which note did not.
    #[resource(validation = Rule::new("self.startsWith('n')")
        .message(Message::Expression("'note ' + self + ' must start with n'".into())))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Cannot change once set (a transition rule).
    #[resource(validation = Rule::new("self == oldSelf")
        .message("lock is immutable")
        .reason(Reason::FieldValueForbidden))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lock: Option<String>,
}

/// A resource whose rule does not compile: the server does not start with it.
#[derive(ApiResource, Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[resource(
    group = "schema.example.com",
    version = "v1",
    kind = "Broken",
    validation = "self.spec.size >"
)]
pub struct BrokenSpec {
    /// Anything.
    pub size: i64,
}
