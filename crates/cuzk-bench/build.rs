//! Build information for `cuzk-bench --version`: the git commit, exactly as cuzk-daemon's build
//! script derives it (that file is included here as a module, so the logic exists once).

#[path = "../cuzk-daemon/build.rs"]
mod git_commit;

fn main() {
    git_commit::main();
}
