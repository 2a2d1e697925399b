use apiserver_framework::prelude::*;

#[derive(ApiResource, Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[resource(group = "example.com", version = "v1", kind = "Foo", scale(spec_replicas_path = "spec.replicas"))]
pub struct FooSpec {
    pub replicas: i32,
}

#[derive(ApiResource, Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[resource(group = "example.com", version = "v1", kind = "Bar",
           scale(spec_replicas_path = "spec.replicas", status_replicas_path = ".status.replicas"))]
pub struct BarSpec {
    pub replicas: i32,
}

fn main() {}
