use apiserver_framework::prelude::*;

#[derive(ApiResource, Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[resource(group = "example.com", version = "v1", kind = "Foo")]
pub struct FooSpec {
    #[resource(list_type = "mapp")]
    pub items: Vec<String>,
    #[resource(list_type = "map")]
    pub keyed: Vec<String>,
}

fn main() {}
