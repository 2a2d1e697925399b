use apiserver_framework::prelude::*;

#[derive(ApiResource, Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[resource(group = "example.com")]
pub struct FooSpec {
    pub size: u32,
}

fn main() {}
