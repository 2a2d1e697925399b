//! `/debug/pprof/` on wardle in production mode (`--profiling`, on by default as upstream):
//! authorized by the host like every other path, and a CPU profile that Go's own
//! `go tool pprof` reads.

use std::process::Command;

use reqwest::Method;

use crate::stack::{FLUNDERS, Stack};
use crate::status;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn go_tool_pprof_reads_a_cpu_profile_and_bob_may_not_take_one() {
    let stack = Stack::start(&[]).await;
    let profile = format!("{}/debug/pprof/profile?seconds=2", stack.wardle_url());

    // bob, who may only read flunders, may not profile.
    let (code, body) = stack.send_as("bob", Method::GET, &profile, None).await;
    assert_eq!(code, 403, "{body}");
    let refused = status(&body);
    assert_eq!(refused["reason"], "Forbidden", "{body}");
    assert_eq!(
        refused["message"],
        "forbidden: User \"bob\" cannot get path \"/debug/pprof/profile\"",
    );

    // The index redirects as upstream's does, and names the profile.
    let index = format!("{}/debug/pprof", stack.wardle_url());
    let no_redirects = reqwest::Client::builder()
        .use_preconfigured_tls(apiserver_framework::testing::tls::http1_config(
            &stack.host.files.ca_pem,
        ))
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let res = no_redirects
        .get(&index)
        .bearer_auth(stack.token("admin"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 302);
    assert_eq!(res.headers()["location"], "/debug/pprof/");
    let (code, page) = stack
        .send_as("admin", Method::GET, &format!("{index}/"), None)
        .await;
    assert_eq!(code, 200, "{page}");
    assert!(page.contains("<a href='profile'>profile</a>"), "{page}");

    // Two profiles asked for at once, while requests keep wardle busy: one is taken, the
    // other refused as Go refuses it.
    let admin = stack.token("admin");
    let client = stack.client();
    let take = |seconds: u32| {
        let url = format!(
            "{}/debug/pprof/profile?seconds={seconds}",
            stack.wardle_url()
        );
        let (client, admin) = (client.clone(), admin.clone());
        tokio::spawn(async move {
            let res = client.get(&url).bearer_auth(&admin).send().await.unwrap();
            let code = res.status().as_u16();
            let content_type = res.headers()["content-type"].to_str().unwrap().to_string();
            (code, content_type, res.bytes().await.unwrap())
        })
    };
    let (first, second) = (take(2), take(1));
    let list = format!("{}{FLUNDERS}", stack.wardle_url());
    while !(first.is_finished() && second.is_finished()) {
        let (code, _) = stack.send_as("admin", Method::GET, &list, None).await;
        assert_eq!(code, 200);
    }
    let (mut taken, mut refused) = (first.await.unwrap(), second.await.unwrap());
    if taken.0 != 200 {
        std::mem::swap(&mut taken, &mut refused);
    }
    assert_eq!(
        (refused.0, String::from_utf8_lossy(&refused.2).as_ref()),
        (
            500,
            "Could not enable CPU profiling: cpu profiling already in use\n"
        )
    );
    let (code, content_type, bytes) = taken;
    assert_eq!(code, 200, "{}", String::from_utf8_lossy(&bytes));
    assert_eq!(content_type, "application/octet-stream");

    let file = stack.path("cpu.pprof");
    std::fs::write(&file, &bytes).unwrap();
    let out = tokio::task::spawn_blocking(move || {
        Command::new("go")
            .args(["tool", "pprof", "-top", "-symbolize=none"])
            .arg(&file)
            .output()
            .expect("go tool pprof runs")
    })
    .await
    .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "go tool pprof: {}\n{text}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("Type: cpu"), "{text}");
    assert!(
        text.contains("apiserver_framework") || text.contains("tokio"),
        "no function of wardle's among the samples:\n{text}"
    );
}
