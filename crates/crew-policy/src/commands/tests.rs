//! The program knowledge as tables of cases, one row per case, each asking one of the
//! questions the engine asks of a command: is it read-only, what does it run besides
//! itself, what does it write, what does a wrapper wrap, is it dangerous, does it run
//! programs it does not show, what does it read recursively. Words are split at spaces;
//! single quotes keep spaces in a word.

use super::*;

/// `s` split into words: at spaces, with `'…'` kept together (quotes removed).
fn w(s: &str) -> Vec<String> {
    let (mut out, mut word, mut quoted, mut started) = (Vec::new(), String::new(), false, false);
    for c in s.chars() {
        match c {
            '\'' => (quoted, started) = (!quoted, true),
            ' ' if !quoted => {
                if started {
                    out.push(std::mem::take(&mut word));
                }
                started = false;
            }
            c => (word.push(c), started = true).1,
        }
    }
    if started {
        out.push(word);
    }
    out
}

fn part(s: &str) -> Part {
    Part {
        argv: w(s),
        ..Part::default()
    }
}

/// A list of strings as one: items joined by `|`.
fn join<S: AsRef<str>>(items: impl IntoIterator<Item = S>) -> String {
    let v: Vec<String> = items.into_iter().map(|s| s.as_ref().to_string()).collect();
    v.join("|")
}

#[test]
#[rustfmt::skip]
fn read_only() {
    let reads = [
        "ls -la src", "grep -rn main src", "wc -l", "sort f", "uniq -c", "head -5 README.md",
        "rg -n foo src", "sed -n 1,20p f", "tree -L 2", "xxd f", "file src/main.rs",
        "jq --arg k v .x f.json", "diff -u a b", "cat README.md", "date", "date +%Y-%m-%d",
        "date -u -d @0 +%s", "hostname", "echo a", "true x",
        "git status", "git -C . status", "git --no-pager log --oneline -5",
        "git -c color.ui=never diff", "git grep -n foo", "git branch --show-current",
        "find . -name *.rs", "find src -type f -newer Cargo.toml -print0",
        "find -L . ( -name a -o -name b ) -maxdepth 2", "find",
    ];
    let not = [
        "sort --compress-program=sh f", "sort -o out f", "sort --output=out f", "tree -o FILE",
        "tree -R -H x", "xxd -r -p - out", "xxd in out", "uniq in out", "rg --pre cat x",
        "rg -z x", "rg --search-zip x", "date -s 2020-01-01", "date --set=2020-01-01",
        "date 0101000030", "date +%s 0101000030", "hostname evil", "hostname -F f",
        "cargo metadata", "cargo tree", "cargo --version", "ls --frobnicate", "cat -Z x",
        "jq -o x", "less +!id f", "sed -n -e 1p f", "sed -n 1p -i f", "sed -nw/tmp/x 1p f",
        "nosuchprog",
        "git -c core.pager=sh log", "git -c alias.st=status st", "git -c x.y=z status",
        "git -p log", "git grep -Ocmd pat", "git grep --open-files-in-pager=cmd pat",
        "git diff --output=/tmp/x", "git --exec-path=/tmp status", "git push",
        "git config --get x --add y",
        "find . -delete", "find . -exec rm {} ;", "find . -fprint /tmp/x", "find . -fls x",
        "find . -okdir rm {} ;", "find . -frobnicate",
    ];
    for s in reads {
        assert!(is_read_only(&part(s)), "{s}");
    }
    for s in not {
        assert!(!is_read_only(&part(s)), "{s}");
    }
}

#[test]
#[rustfmt::skip]
fn file_option_values_are_paths() {
    let cases = [
        ("file -f ~/.ssh/id_rsa", "~/.ssh/id_rsa"), ("file -f~/.ssh/id_rsa", "~/.ssh/id_rsa"),
        ("grep -f/etc/shadow x", "/etc/shadow"), ("tree -oFILE", "FILE"),
        ("cc -o/tmp/out x.c", "/tmp/out"), ("sort --output=o f", "o"),
        ("git -C /etc status", "/etc"), ("git show HEAD:s/k", "s/k"),
    ];
    for (s, path) in cases {
        assert!(path_operands(&part(s)).contains(&path.to_string()), "{s}");
    }
}

/// What a command runs besides itself: `(via) script`, `(via) [argv]`, or `OPAQUE`.
fn runs(s: &str) -> String {
    join(embedded(&w(s), &[]).into_iter().map(|e| match e {
        Embedded::Script { via, script } => format!("{via} {script}"),
        Embedded::Command { via, argv } => format!("{via} [{}]", argv.join(" ")),
        Embedded::Opaque(_) => "OPAQUE".into(),
    }))
}

#[test]
#[rustfmt::skip]
fn commands_run_from_options_and_program_text() {
    let cases = [
        ("awk 'BEGIN{system(\"rm x\")}'", "OPAQUE"), ("awk '{print | \"sh\"}'", "OPAQUE"),
        ("gawk 'BEGIN{\"date\" | getline d}'", "OPAQUE"), ("awk '{system($0)}'", "OPAQUE"),
        ("awk -e '{print |& c}' f", "OPAQUE"), ("awk '/a|b/ {print $1 || 0}' f", ""),
        ("awk -F: '{print $1}' /etc/passwd", ""), ("awk '{print \"a|system\"} # |' f", ""),
        ("awk -f prog.awk '{system(1)}'", ""),
        ("sed '1e rm x' f", "OPAQUE"), ("sed -e s/a/b/e f", "OPAQUE"),
        ("sed -n 's/a/b/gp;3p' f", ""), ("sed s/hello/bye/g f", ""),
        ("sed -ne '1e rm x' f", "OPAQUE"), ("sed -l 5 '1e rm x' f", "OPAQUE"),
        // POSIXLY_CORRECT stops options at the first operand: it may be the script.
        ("sed '1e rm x' -e p f", "OPAQUE"), ("sed /x/{e }", "OPAQUE"),
        ("vim -c '!rm x' -c q", "OPAQUE|OPAQUE"), ("vim '+:call system(1)'", "OPAQUE"),
        ("nvim +12 f", ""),
        ("tar -cf a '--checkpoint-action=exec=rm x' f", "OPAQUE"),
        ("tar -I 'rm x' -xf a.tar", "(tar -I) rm x"), ("tar '--to-command=rm x' -xf a", "(tar --to-command) rm x"),
        ("tar --use-compress-program 'rm x' -xf a", "(tar --use-compress-program) rm x"),
        ("tar -F evil -xf a", "(tar -F) [evil]"), ("tar -tf a.tar", ""),
        ("rsync -avze 'rm x' a b:c", "(rsync -e) rm x"), ("rsync '--rsh=rm x' a b:c", "(rsync --rsh) rm x"),
        ("rsync -eCMD a b:c", "(rsync -e) CMD"),
        ("ssh -o 'ProxyCommand=rm x' h", "(ssh -o proxycommand) rm x"),
        ("ssh '-oLocalCommand rm x' h", "(ssh -o localcommand) rm x"),
        ("ssh -o Include=/tmp/c h", "OPAQUE"), ("ssh -F /tmp/c h", "OPAQUE"),
        ("ssh -o StrictHostKeyChecking=no h", ""), ("scp -S evil a h:b", "(scp -S) [evil]"),
        ("man -P 'rm x' ls", "(man -P) rm x"), ("man '--pager=rm x' ls", "(man --pager) rm x"),
        ("zip -T -TT 'rm x' a.zip f", "(zip -TT) rm x"), ("ssh h ls", ""),
        ("find . -name x -exec rm -rf {} ; -execdir git push +", "(find -exec) [rm -rf {}]|(find -execdir) [git push +]"),
        ("find . -exec rm {} +", "(find -exec) [rm {}]"),
        ("git rebase -x rm HEAD~2", "(git rebase -x) rm"),
        ("git submodule foreach --recursive git push", "(git submodule foreach) git push"),
        ("git bisect run rm x", "(git bisect run) [rm x]"),
        ("git fetch --upload-pack=rm x", "(git fetch --upload-pack) rm"),
        ("git fetch ext::sh", "OPAQUE"),
        ("git grep -e x '--open-files-in-pager=rm x'", "(git grep -O) rm x"), ("git grep -O x", "OPAQUE"),
        ("git -c 'core.pager=rm x' log", "(git -c core.pager) rm x"), ("git -c core.hooksPath=/t status", "OPAQUE"),
        ("git --exec-path=/t status", "OPAQUE"), ("git --config-env=a=B status", "OPAQUE"),
        ("git -c 'alias.p=!git push' p origin", "(git alias p) git push 'origin'"),
        ("git -c alias.p=push p -f", "(git alias p) [git push -f]"),
        ("alias 'p=git push'", "(alias p) git push"), ("trap 'rm x' EXIT", "(trap) rm x"),
        ("export 'PAGER=git push'", "(PAGER=) git push"), ("export A=1", ""),
    ];
    for (s, want) in cases {
        assert_eq!(runs(s), want, "{s}");
    }
    let env = [("GIT_SSH_COMMAND", "git push"), ("LESSOPEN", "|cat %s"), ("LD_PRELOAD", "x.so")];
    let env: Vec<(String, String)> = env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    let e = embedded(&w("git fetch"), &env);
    assert!(matches!(&e[..], [Embedded::Script { script: a, .. }, Embedded::Script { script: b, .. }, Embedded::Opaque(_)]
        if a == "git push" && b == "cat \"$1\""), "{e:?}");
}

/// What `s` writes (`.` for its cwd).
fn written(s: &str) -> String {
    let words = w(s);
    let t = writes(&words);
    let mut out: Vec<String> = t
        .targets
        .iter()
        .map(|&(i, from)| words[i][from..].to_string())
        .collect();
    if t.cwd {
        out.push(".".into());
    }
    join(out)
}

#[test]
#[rustfmt::skip]
fn files_named_as_written() {
    let cases = [
        ("cp README.md /home/u/.profile", "/home/u/.profile"), ("cp -r a b dest", "dest"),
        ("cp -t dir a b", "dir"), ("cp --target-directory=dir a", "dir"), ("cp -S .bak a b", "b"),
        ("mv a b", "a|b"), ("install -m 644 f /home/u/.y", "/home/u/.y"), ("install -d a b", "a|b"),
        ("ln -sf target link", "link"), ("ln -s /etc/passwd", "."), ("cp -- -x y", "y"),
        ("tee -a x y", "x|y"), ("touch -d 2020-01-01 m", "m"), ("touch -r ref m", "m"),
        ("mkdir -p -m 700 a/b", "a/b"), ("rm -rf build", "build"), ("truncate -s 0 log", "log"),
        ("chmod 600 a b", "a|b"), ("chmod -x a", "a"), ("chown --reference=r a", "a"),
        ("uniq -c in out", "out"), ("uniq -c in", ""),
        ("sort -o out f", "out"), ("sort -oout f", "out"), ("sort --output=out f", "out"),
        ("sort -rn -k 2 f", ""), ("sed -i s/a/b/ f g", "f|g"), ("sed -i.bak -e s/a/b/ f", "f"),
        ("sed --in-place s/a/b/ f", "f"), ("sed -ie s/a/b/ f", "f"), ("sed -i -l 5 s/a/b/ f", "f"),
        ("sed -i s/a/b/ -e p f", "s/a/b/|f"), ("sed -n 1p f", ""),
        ("dd if=/dev/zero of=/home/u/x bs=1", "/home/u/x"), ("curl -sSLo out https://x", "out"),
        ("curl -o out https://x", "out"), ("curl --output=out https://x", "out"),
        ("curl -O https://x/y", "."), ("curl -H a:b https://x", ""), ("wget -O out https://x", "out"),
        ("wget https://x", "."), ("git diff --output=/tmp/x", "/tmp/x"),
        ("git format-patch -o out HEAD~1", "out"), ("git clone https://x dir", "dir"),
        ("git worktree add ../wt", "../wt"), ("tar xzf a.tgz -C /home/u", "/home/u"),
        ("tar -xf a.tar", "."), ("tar czf out.tgz src", "out.tgz"),
        ("tar --create --file=out.tar src", "out.tar"), ("tar tf a.tar", ""),
        ("git status --short", ""), ("ls -la", ""),
    ];
    for (s, want) in cases {
        assert_eq!(written(s), want, "{s}");
    }
    let edits = [("mkdir -p a", true), ("touch m", true), ("cp -r a b", true), ("mv a b", true),
        ("cp --frobnicate a b", false), ("rm a", false), ("tee a", false), ("ln -s a b", false)];
    for (s, want) in edits {
        assert_eq!(writes(&w(s)).edits_only, want, "{s}");
    }
}

/// What a wrapper wraps: `rest: …`, `script: …`, `STDIN`, `OPAQUE` or `NONE`.
fn unwrapped(s: &str) -> String {
    match unwrap(&w(s)) {
        Some(Unwrap::Command { rest, .. }) => format!("rest: {}", rest.join(" ")),
        Some(Unwrap::Script { script, .. }) => format!("script: {script}"),
        Some(Unwrap::Stdin { .. }) => "STDIN".into(),
        Some(Unwrap::Opaque { .. }) => "OPAQUE".into(),
        None => "NONE".into(),
    }
}

#[test]
#[rustfmt::skip]
fn wrappers_are_unwrapped_by_their_options() {
    let cases = [
        ("timeout --kill-after 1 5 git push", "rest: git push"), ("timeout -k1 5 git push", "rest: git push"),
        ("timeout -s KILL 5 rm x", "rest: rm x"), ("nice --adjustment 5 rm x", "rest: rm x"),
        ("nice -n5 rm x", "rest: rm x"), ("nice -10 rm x", "rest: rm x"),
        ("sudo --user root rm x", "rest: rm x"), ("sudo -uroot rm x", "rest: rm x"),
        ("sudo -u root -- rm x", "rest: rm x"), ("env -i A=1 rm x", "rest: rm x"),
        ("env --chdir=/ rm x", "rest: rm x"), ("env -u HOME -C / rm x", "rest: rm x"),
        ("env -u -- A=1 rm x", "rest: rm x"), ("env -i -- A=1 rm x", "rest: rm x"),
        ("env -- -i rm x", "rest: -i rm x"), ("env A=1 -u X B=2 rm x", "rest: rm x"),
        ("xargs -0I X rm X", "rest: rm $(…)"), ("xargs --replace rm {}", "rest: rm $(…)"),
        ("xargs -I{} -n1 rm {}", "rest: rm $(…)"), ("busybox rm -rf x", "rest: rm -rf x"),
        ("toybox rm x", "rest: rm x"), ("coreutils --coreutils-prog=rm x", "rest: rm x"),
        ("/usr/bin/time -o out true", "rest: true"), ("flock /tmp/l git push", "rest: git push"),
        ("env -vS 'touch /tmp/x'", "script: touch /tmp/x"), ("env '-vStouch /tmp/x'", "script: touch /tmp/x"),
        ("env -vS rm -i x", "script: rm -i x"), ("env '--split-string=rm x'", "script: rm x"),
        ("bash -o errexit -c 'rm x'", "script: rm x"), ("bash -e -o pipefail -c 'rm x'", "script: rm x"),
        ("bash --norc -c 'rm x'", "script: rm x"), ("sh -lc 'rm x'", "script: rm x"),
        ("bash -c -e 'rm x'", "script: rm x"), ("su - root -c 'rm x'", "script: rm x"),
        ("su --command='rm x'", "script: rm x"), ("watch -n 1 git push", "script: git push"),
        ("flock /tmp/l -c 'git push'", "script: git push"), ("eval rm x", "script: rm x"),
        ("bash", "STDIN"), ("sh -s", "STDIN"), ("bash /dev/stdin", "STDIN"),
        ("source /dev/stdin", "STDIN"), ("bash -e -s x", "STDIN"), ("bash build.sh", "NONE"),
        ("timeout --frobnicate 5 rm x", "OPAQUE"), ("env -P /x rm", "OPAQUE"),
        ("sudo --weird rm", "OPAQUE"), ("bash --rcfile x -c ls", "OPAQUE"),
        ("bash -Z -c ls", "OPAQUE"), ("strace -f git push", "OPAQUE"), ("nice --adj=5 rm", "OPAQUE"),
        ("sudo -l", "OPAQUE"), ("su -Z x", "OPAQUE"), ("bash /dev/fd/63", "OPAQUE"),
        ("command -v git", "NONE"), ("su root", "NONE"), ("ls -la", "NONE"),
    ];
    for (s, want) in cases {
        assert_eq!(unwrapped(s), want, "{s}");
    }
    let effects = |s: &str| match unwrap(&w(s)) {
        Some(Unwrap::Command { effects, .. }) => effects,
        other => panic!("{s}: {other:?}"),
    };
    assert_eq!(effects("/usr/bin/time -o ~/.bashrc true").writes, ["~/.bashrc"]);
    assert_eq!(effects("xargs -a list rm").reads, ["list"]);
    assert_eq!(effects("env --chdir=/etc cat x").chdir.as_deref(), Some("/etc"));
    assert_eq!(effects("sudo -D /etc cat x").chdir.as_deref(), Some("/etc"));
}

#[test]
#[rustfmt::skip]
fn dangerous_and_hidden_runners() {
    let dangerous_ = ["git reset --hard", "/usr/bin/git reset --hard", "git -C . reset --hard",
        "git --no-pager -c a=b push --force", "git -c x=y -C . push -f", "git clean -fd", "pkill x"];
    let fine = ["git reset --soft", "git -C . status", "git push origin main"];
    for s in dangerous_ {
        assert!(dangerous(&part(s)).is_some(), "{s}");
    }
    for s in fine {
        assert!(dangerous(&part(s)).is_none(), "{s}");
    }
    let hidden = [
        "python3 -c x", "python -c x", "python3 script.py", "perl -e x", "perl -E x", "node -e x",
        "node -p x", "ruby -e x", "php -r x", "lua -e x", "bash script.sh", "make",
        "make -f /dev/stdin", "xargs git", "find . -exec git push ;", "find . -execdir x ;",
        "env -S x", "env --split-string=x", "eval x", "source x", ". x", "alias g=git",
        "npm exec x", "npm x x", "npx x", "pnpm dlx x", "pnpm exec x", "yarn dlx x", "yarn exec x",
        "bunx x", "bun x x", "uvx x", "uv run x", "pipx run x", "/usr/bin/python3 -c x",
        "let x=n", "read a[$(id)]", "unset a[`id`]", "printf -v x y", "awk -f p.awk",
    ];
    let shown = ["npm test", "npm run build", "uv sync", "find . -name x", "env A=1",
        "python3 --version", "git push", "ls", "awk {print}"];
    for s in hidden {
        assert!(runners::hidden_program(&w(s)).is_some(), "{s}");
    }
    for s in shown {
        assert!(runners::hidden_program(&w(s)).is_none(), "{s}");
    }
    let rules: [(&[&str], bool, bool); 7] = [(&["npm"], true, true), (&["npm", "exec"], true, true),
        (&["npm", "exec"], false, true), (&["npm", "test"], true, false), (&["python3"], true, true),
        (&["python3", "--version"], false, false), (&["cargo"], true, false)];
    for (words, wild, want) in rules {
        assert_eq!(rule_may_run_hidden(words, wild), want, "{words:?} {wild}");
    }
    assert!(runs_code("python3") && runs_code("sudo") && !runs_code("npm") && !runs_code("ls"));
}

/// A part's read scopes, `|`-joined; `ALL` when the whole cwd is among them.
fn scoped(s: &str) -> String {
    match search_scopes(&part(s)) {
        None => "NONE".into(),
        Some(v) if v.iter().any(|w| w == ".") && !v.iter().all(|w| w == ".") => {
            format!("ALL {}", join(v))
        }
        Some(v) => join(v),
    }
}

#[test]
#[rustfmt::skip]
fn recursive_reads_and_printed_contents_have_scopes() {
    let cases = [
        ("grep -r x", "ALL x|."), ("grep -rn main src", "main|src"), ("grep -d recurse x", "ALL x|."),
        ("grep -n main src/x.rs", "NONE"), ("rg x", "ALL x|."), ("git grep x", "."),
        ("git show", "."), ("git show HEAD:src/x.rs", "src/x.rs"), ("git diff -- src", "src"),
        ("git log --oneline -5", "NONE"), ("git log -p", "."), ("git status", "NONE"),
        ("diff -rN src .", "ALL src|."), ("diff --recursive a b", "a|b"), ("diff -u a b", "NONE"),
        ("git log -p -- src/", "src/"), ("git log -L1,1:secrets/key.txt", "secrets/key.txt"),
        ("git log -L 1,5:src/a.rs", "src/a.rs"), ("git log -L:main:src/a.rs", "src/a.rs"),
        ("git log -L1,1:src/a.rs -p", "ALL src/a.rs|."), ("git cat-file -p HEAD~1:x", "x"),
    ];
    for (s, want) in cases {
        assert_eq!(scoped(s), want, "{s}");
    }
    let whole = [
        "git log --patch", "git log -u", "git log -U1", "git log --binary", "git log --dd",
        "git log --remerge-diff", "git log --cc", "git log -c", "git log -m -p", "git log -W",
        "git log --word-diff", "git log -Ssecret --oneline", "git log -G secret",
        "git log --diff-merges=on", "git whatchanged --binary", "git whatchanged -p",
        "git diff-tree --binary -r --root HEAD", "git diff-tree -p HEAD", "git reflog -p",
        "git show --stat", "git diff HEAD~1 HEAD", "git cat-file --batch", "git archive HEAD",
        "git grep TOPSECRET HEAD", "git blame README.md", "git format-patch --stdout -1",
        "git fast-export --all", "git stash show -p", "git stash list -p", "git -C . log -p",
        "git --no-pager log -p",
    ];
    for s in whole {
        assert_eq!(scoped(s), ".", "{s}");
    }
    let none = ["git log --stat", "git log --name-only", "git log --format=%H", "git whatchanged",
        "git diff-tree -r --root HEAD", "git rev-parse HEAD", "git ls-files", "git stash list",
        "git branch -a"];
    for s in none {
        assert_eq!(scoped(s), "NONE", "{s}");
    }
    let objects = [("HEAD:secrets/k", Some("secrets/k")), (":secrets/k", Some("secrets/k")),
        (":0:secrets/k", Some("secrets/k")), ("HEAD:", Some(".")), ("HEAD", None)];
    for (word, want) in objects {
        assert_eq!(search::object_path(word), want, "{word}");
    }
    assert_eq!(search::object_paths(&w("git cat-file blob HEAD:s/k")), ["s/k"]);
}

#[test]
#[rustfmt::skip]
fn spellings_deny_rules_see() {
    let globals = ["git -C . push", "git -c k=v push", "git --no-pager push", "git --git-dir=x push",
        "git --git-dir x push", "git -P push", "git --work-tree=. push", "git --namespace n push",
        "/usr/bin/git -C . --no-pager -c a.b=c push"];
    for s in globals {
        assert_eq!(git::canonical(&w(s)), Some(w("git push")), "{s}");
    }
    assert_eq!(git::canonical(&w("git push")), None);
    let forms = [("/usr/bin/git push", "git push"), ("/usr/bin/git -C . push", "git -C . push|git push"),
        ("git --no-pager push", "git push"), ("git push", ""), ("/bin/rm x", "rm x"),
        ("git send-pack o m", "git push o m")];
    for (s, want) in forms {
        assert_eq!(join(match_forms(&part(s))), want, "{s}");
    }
}

#[test]
#[rustfmt::skip]
fn git_settings_that_run_programs() {
    use git::{ConfigEffect as E, config_effect};
    let shell = |s: &str| E::Shell(s.into());
    let cases = [
        ("core.pager", "sh -c x", shell("sh -c x")), ("core.sshCommand", "evil", shell("evil")),
        ("credential.helper", "store", shell("git credential-store")),
        ("filter.x.smudge", "evil", shell("evil")), ("diff.x.textconv", "evil", shell("evil")),
        ("pager.log", "evil", shell("evil")), ("pager.log", "false", E::Unknown),
        ("core.fsmonitor", "false", E::Safe), ("user.name", "x", E::Safe),
        ("some.new.key", "x", E::Unknown), ("alias.p", "!x", E::Unknown),
    ];
    for (k, v, want) in cases {
        assert_eq!(config_effect(k, v), want, "{k}={v}");
    }
    for k in ["core.hooksPath", "include.path", "safe.directory", "protocol.ext.allow"] {
        assert!(matches!(config_effect(k, "x"), E::Opaque(_)), "{k}");
    }
}
