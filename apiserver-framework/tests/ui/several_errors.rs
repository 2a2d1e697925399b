use apiserver_framework::prelude::*;

#[derive(ApiResource, Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[resource(group = "Example.com", version = "v1.0", kind = "foo")]
pub struct FooSpec {
    pub size: u32,
}

fn main() {}
