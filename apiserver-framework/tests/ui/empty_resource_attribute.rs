use apiserver_framework::prelude::*;

#[derive(ApiResource, Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[resource()]
pub struct FooSpec {
    pub size: u32,
}

fn main() {}
