use apiserver_framework::prelude::*;

#[derive(ApiResource, Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[resource(group = "example.com", version = "v1", kind = "Foo")]
pub struct FooSpec<T> {
    pub size: T,
}

fn main() {}
