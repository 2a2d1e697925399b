use apiserver_framework::prelude::*;

#[derive(ApiResource, Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[resource(group = "example.com", version = "v1", kind = "Foo",
           printcolumn(name = "Size"))]
pub struct FooSpec {
    pub size: u32,
}

fn main() {}
