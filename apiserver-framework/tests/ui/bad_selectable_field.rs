use apiserver_framework::prelude::*;

#[derive(ApiResource, Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[resource(group = "example.com", version = "v1", kind = "Foo", selectable_field = "spec.color")]
pub struct FooSpec {
    pub color: String,
}

fn main() {}
