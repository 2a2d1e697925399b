use apiserver_framework::prelude::*;

#[derive(ApiResource, Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[resource(group = "example.com", version = "1.0", kind = "Foo")]
pub struct FooSpec {
    pub size: u32,
}

fn main() {}
