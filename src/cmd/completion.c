/*
 * completion.c: 'vigil completion bash|zsh|fish' prints a shell completion script, generated
 * from what vigil itself knows: the command table (commands and subcommands), the options of
 * each command (comp_table below), the check registry (names after --only and --skip) and the
 * configuration schema (keys after -c and --set). The scripts in contrib/completion/ are this
 * output; tests/unit/test_completion.c fails when they differ from it, and when comp_table and
 * a command's getopt table disagree (it reads src/cmd/ for the latter), so none can drift.
 *
 * The scripts carry their words with them and never run vigil while completing: completion
 * stays instant and works on a host where vigil cannot start.
 */
#include "cmd.h"
#include "completion.h"
#include "config_keys.h"
#include "../checks/check.h"
#include "../lib/strbuf.h"

#include <errno.h>

/* the options every active test takes (ACTIVE_OUT_OPTIONS in active.h) */
#define COMP_ACTIVE_OPTS                                                                           \
	"--json --reason --verbose -v --color=auto|always|never --config=file --set=key "          \
	"-c=key --host=any --host-from-slurmd --help -h"
#define COMP_NET_OPTS                                                                              \
	"--op=any --sizes=any --gpus=any --iters=any --warmup=any --timeout=any "                  \
	"--single-process --rank=any --nranks=any --rendezvous=any --gpu=any --run-id=any "        \
	"--fault-hang-rank=any --fault-bytes=any --deadline=any --bytes=any --reps=any " COMP_ACTIVE_OPTS
#define COMP_DIAG_OPTS                                                                             \
	"--json --html=file --expected-mfu=any --expected-step-time=any "                          \
	"--flops-per-token=any --peak-flops=any --step-pattern=any --help -h @file"

/*
 * What each command path takes, one row per path that vigil accepts ("" is vigil itself).
 * opts: space-separated words; an option that takes a value is "--name=KIND", where KIND is
 * check (a comma list of check names), key (a configuration key), file, dir, cmd (a command
 * or 'config', for help), any (nothing to offer) or choices joined by '|'. A word "@KIND" is
 * what the path's operands are. The children of a path are the rows one word longer.
 */
const struct comp_def comp_table[] = {
	{ "", "--help -h --version" },
	{ "check", "--root=dir --kernel-log=file --only=check --skip=check --config=file "
		   "--set=key -c=key --state-dir=dir --host=any --host-from-slurmd --timeout=any "
		   "--json --prom=file --reason --verbose -v --color=auto|always|never --cached --slurm --npd --deep "
		   "--help -h" },
	{ "gather", "--root=dir --timeout=any --help -h @dir" },
	{ "agent", "--root=dir --config=file --set=key -c=key --state-dir=dir --host=any "
		   "--only=check --skip=check --interval=any --jitter=any --listen=any "
		   "--socket=file --prom=file --timeout=any --once --cycles=any --help -h" },
	{ "stress", "--help -h" },
	{ "stress gpu", "--duration=any --gpus=any --dtypes=any --no-gemm --no-hbm --no-memtest "
			"--timeout=any --inject=gemm|hbm|memtest|sdc --determinism --repeats=any "
			"--reference=file " COMP_ACTIVE_OPTS },
	{ "stress storage", "--dir=dir --size=any --file-size=any --writers=any --block=any "
			    "--duration=any --stall-ms=any --meta-files=any --buffered "
			    "--inject=stall|corrupt --verify=auto|inline|overlapped|none " COMP_ACTIVE_OPTS },
	{ "net", "--help -h" },
	{ "net nccl", COMP_NET_OPTS },
	{ "net pairs", COMP_NET_OPTS },
	{ "net ib", "--server --peer=any --srun --nodes=any --hca=any --gpus=any --no-cuda "
		    "--no-latency --duration=any --size=any --port=any --timeout=any "
		    "--connect-wait=any --counters --root=dir " COMP_ACTIVE_OPTS },
	{ "run", "--nodes=any --spares=any --hosts=any --tasks-per-node=any --run-dir=dir --max-restarts=any "
		 "--step-pattern=any --hang-after=any --hang-floor=any --startup-timeout=any "
		 "--slow-factor=any --check-interval=any --smoke=any --json --nccl-recorder "
		 "--config=file --set=key -c=key --help -h" },
	{ "fleet", "--help -h" },
	{ "fleet check", "--partition=any --nodes=any --json --drain --timeout=any --parallel=any "
			 "--config=file --set=key -c=key --help -h" },
	{ "fleet model", "--agent-history=dir --slurm-events=file --from-slurm --journal=dir "
			 "--since=any --until=any --gpus-per-node=any --fleet-nodes=any --alpha=any "
			 "--without-lemons --output=file -o=file --json --help -h" },
	{ "fleet lemons", "--agent-history=dir --slurm-events=file --from-slurm --journal=dir "
			  "--since=any --until=any --gpus-per-node=any --fleet-nodes=any "
			  "--alpha=any --top=any --json --help -h" },
	{ "stacks", "--attempt-dir=dir --host=any --job=any --step=any --uid=any --samples=any "
		    "--interval-ms=any --no-signal --json --help -h" },
	{ "qualify", "--budget=any --stages=any --storage=dir --train=any --train-groups=any "
		     "--gpus-per-node=any "
		     "--drain --json=file --html=file --compare=file --compare-json=file --resume=dir "
		     "--dir=dir "
		     "--from=file --config=file --set=key -c=key --help -h" },
	{ "sim", "--gpus=any --gpus-per-node=any --days=any --step-time=any --failures=file "
		 "--checkpoint-every=any --checkpoint-cost=any --restart-cost=any --spares=any "
		 "--repair-hours=any --check-interval=any --seed=any --json --print-model "
		 "--policy=vigil|torchrun|manual --schedule=file --nccl-timeout=any --operator-minutes=any "
		 "--monitor-interval=any --hang-floor=any --latencies=any "
		 "--replicas=any --sweep=any --spares-risk=any --html=file --help -h" },
	{ "report", "--json --html=file --help -h @dir" },
	{ "diagnose", "--help -h" },
	{ "diagnose steps", COMP_DIAG_OPTS },
	{ "diagnose stragglers", COMP_DIAG_OPTS },
	{ "diagnose logs", "--json --all --help -h @file" },
	{ "diagnose hang", "--json --all --help -h @file" },
	{ "fabric", "--help -h" },
	{ "fabric ufm", "--state=dir --json --csv --flap-downs=any --flap-window=any "
			"--error-events=any --apply=any --credentials=file --rest-timeout=any "
			"--help -h @file" },
	{ "fabric ufm close", "--state=dir --help -h" },
	{ "fabric links", "--json --expect=file --help -h @file" },
	{ "fabric burnin", "--help -h" },
	{ "fabric burnin plan", "--json --fat-tree=any --hosts-per-stage=any --hosts=any --output=file -o=file "
				"--help -h @file" },
	{ "fabric burnin run", "--jobid=any --stage=any --duration=any --no-cuda --port=any --timeout=any "
			       "--vigil=file --json --config=file --set=key -c=key --help -h "
			       "@file" },
	{ "list", "--help -h" },
	{ "help", "--help -h @cmd" },
	{ "version", "--help -h" },
	{ "completion", "--help -h" },
	{ "completion bash", "" },
	{ "completion zsh", "" },
	{ "completion fish", "" },
};
const size_t comp_table_nr = ARRAY_SIZE(comp_table);

static const char completion_usage[] =
	"usage: vigil completion bash|zsh|fish\n"
	"\n"
	"Print the shell completion script for bash, zsh or fish: commands, subcommands,\n"
	"options, check names after --only/--skip and configuration keys after -c.\n"
	"'make install' installs them; to try one in the shell at hand:\n"
	"  bash:  source <(vigil completion bash)\n"
	"  zsh:   source <(vigil completion zsh)\n"
	"  fish:  vigil completion fish | source\n";

/* The words one below path (a path's children), space-separated into out. */
void comp_children(const char *path, struct strbuf *out)
{
	size_t n = strlen(path);
	for (size_t i = 0; i < comp_table_nr; i++) {
		const char *p = comp_table[i].path;
		const char *w = n ? p + n + 1 : p;
		if (!*p || (n && (strncmp(p, path, n) || p[n] != ' ')) || strchr(w, ' '))
			continue;
		strbuf_addf(out, "%s%s", out->len ? " " : "", w);
	}
}

static const char *summary_of(const char *path)
{
	const struct cmd_def *c = strchr(path, ' ') ? NULL : cmd_find(path);
	return c ? c->summary : NULL;
}

/* Every check name, and every configuration key that is a name (not a pattern). */
static void add_checks(struct strbuf *out)
{
	for (size_t i = 0; i < check_table_nr; i++)
		strbuf_addf(out, "%s%s", i ? " " : "", check_table[i].name);
}

static void add_keys(struct strbuf *out)
{
	size_t nr;
	const struct config_key *k = config_schema(&nr);
	for (size_t i = 0; i < nr; i++)
		if (!strpbrk(k[i].name, "*?["))
			strbuf_addf(out, "%s%s", out->len ? " " : "", k[i].name);
}

/* The data functions bash and zsh share: the same sh 'case' syntax reads in both. */
static void sh_data(struct strbuf *o)
{
	struct strbuf w = STRBUF_INIT;
	strbuf_addstr(o, "_vigil_children() {\n\tcase \"$1\" in\n");
	for (size_t i = 0; i < comp_table_nr; i++) {
		strbuf_reset(&w);
		comp_children(comp_table[i].path, &w);
		if (w.len)
			strbuf_addf(o, "\t\"%s\") _vigil_r=\"%s\" ;;\n", comp_table[i].path, w.buf);
	}
	strbuf_addstr(o, "\t*) _vigil_r=\"\" ;;\n\tesac\n}\n\n_vigil_opts() {\n\tcase \"$1\" in\n");
	for (size_t i = 0; i < comp_table_nr; i++)
		strbuf_addf(o, "\t\"%s\") _vigil_r=\"%s\" ;;\n", comp_table[i].path,
			    comp_table[i].opts);
	strbuf_addstr(o, "\t*) _vigil_r=\"\" ;;\n\tesac\n}\n\n");
	strbuf_reset(&w);
	add_checks(&w);
	strbuf_addf(o, "_vigil_checks=\"%s\"\n", w.buf);
	strbuf_reset(&w);
	add_keys(&w);
	strbuf_addf(o, "_vigil_keys=\"%s\"\n", w.buf);
	strbuf_reset(&w);
	comp_children("", &w);
	strbuf_addf(o, "_vigil_cmds=\"%s config\"\n\n", w.buf);
	/* the kind of value option $2 of path $1 takes ("" for a flag or an unknown option) */
	strbuf_addstr(o, "_vigil_kind() {\n"
			 "\tlocal t\n"
			 "\t_vigil_opts \"$1\"\n"
			 "\tfor t in ${=_vigil_r}; do\n"
			 "\t\tif [[ $t == *=* && ${t%%=*} == \"$2\" ]]; then\n"
			 "\t\t\t_vigil_r=${t#*=}\n"
			 "\t\t\treturn 0\n"
			 "\t\tfi\n"
			 "\tdone\n"
			 "\t_vigil_r=\"\"\n"
			 "}\n\n"
			 /* the command path before the word being completed, and whether that word
			  * is an option's value: the words of the shell are in $@ */
			 "_vigil_where() {\n"
			 "\tlocal w\n"
			 "\t_vigil_path=\"\" _vigil_want=\"\"\n"
			 "\tfor w in \"$@\"; do\n"
			 "\t\tif [[ -n $_vigil_want ]]; then\n"
			 "\t\t\t[[ $w == \"=\" ]] || _vigil_want=\"\"\n"
			 "\t\t\tcontinue\n"
			 "\t\tfi\n"
			 "\t\tif [[ $w == -* ]]; then\n"
			 "\t\t\tif [[ $w != *=* ]]; then\n"
			 "\t\t\t\t_vigil_kind \"$_vigil_path\" \"$w\"\n"
			 "\t\t\t\t_vigil_want=$_vigil_r\n"
			 "\t\t\tfi\n"
			 "\t\t\tcontinue\n"
			 "\t\tfi\n"
			 "\t\t_vigil_children \"$_vigil_path\"\n"
			 "\t\tif [[ \" $_vigil_r \" == *\" $w \"* ]]; then\n"
			 "\t\t\t_vigil_path=${_vigil_path:+$_vigil_path }$w\n"
			 "\t\tfi\n"
			 "\tdone\n"
			 "}\n\n");
	strbuf_release(&w);
}

static void gen_bash(struct strbuf *o)
{
	strbuf_addstr(o,
		      "# bash completion for vigil. Generated by 'vigil completion bash' from "
		      "vigil's command table,\n# check registry and configuration schema: do not "
		      "edit, regenerate.\n\n");
	struct strbuf d = STRBUF_INIT;
	sh_data(&d);
	/* ${=x} is zsh's word splitting; bash splits $x unquoted by itself */
	for (char *p = d.buf; (p = strstr(p, "${=")); p++) {
		memmove(p + 2, p + 3, strlen(p + 3) + 1);
		d.len--;
	}
	strbuf_add(o, d.buf, d.len);
	strbuf_release(&d);
	strbuf_addstr(
		o,
		"# COMPREPLY from the value kind $1 for the word $2, each reply prefixed with $3\n"
		"_vigil_values() {\n"
		"\tlocal cur=$2 head=\"\"\n"
		"\tcase $1 in\n"
		"\tcheck)\n"
		"\t\t[[ $cur == *,* ]] && head=${cur%,*},\n"
		"\t\tCOMPREPLY=($(compgen -P \"$3$head\" -W \"$_vigil_checks\" -- \"${cur##*,}\")) ;;\n"
		"\tkey)\n"
		"\t\tCOMPREPLY=($(compgen -P \"$3\" -S = -W \"$_vigil_keys\" -- \"$cur\"))\n"
		"\t\tcompopt -o nospace 2>/dev/null ;;\n"
		"\tcmd) COMPREPLY=($(compgen -W \"$_vigil_cmds\" -- \"$cur\")) ;;\n"
		"\tfile)\n"
		"\t\tCOMPREPLY=($(compgen -f -- \"$cur\"))\n"
		"\t\tcompopt -o filenames 2>/dev/null ;;\n"
		"\tdir)\n"
		"\t\tCOMPREPLY=($(compgen -d -- \"$cur\"))\n"
		"\t\tcompopt -o filenames 2>/dev/null ;;\n"
		"\tany) ;;\n"
		"\t*) COMPREPLY=($(compgen -P \"$3\" -W \"${1//|/ }\" -- \"$cur\")) ;;\n"
		"\tesac\n"
		"}\n\n"
		"_vigil() {\n"
		"\tlocal cur=${COMP_WORDS[COMP_CWORD]} pre=\"\" t names=\"\"\n"
		"\tCOMPREPLY=()\n"
		"\t_vigil_where \"${COMP_WORDS[@]:1:COMP_CWORD-1}\"\n"
		"\tif [[ -z $_vigil_want && $cur == --*=* ]]; then\n"
		"\t\t_vigil_kind \"$_vigil_path\" \"${cur%%=*}\"\n"
		"\t\t_vigil_want=$_vigil_r pre=${cur%%=*}= cur=${cur#*=}\n"
		"\tfi\n"
		"\t[[ $cur == \"=\" ]] && cur=\"\"\n"
		"\tif [[ -n $_vigil_want ]]; then\n"
		"\t\t_vigil_values \"$_vigil_want\" \"$cur\" \"$pre\"\n"
		"\t\treturn 0\n"
		"\tfi\n"
		"\t_vigil_opts \"$_vigil_path\"\n"
		"\tif [[ $cur == -* ]]; then\n"
		"\t\tfor t in $_vigil_r; do\n"
		"\t\t\t[[ $t == -* ]] && names+=\" ${t%%=*}\"\n"
		"\t\tdone\n"
		"\t\tCOMPREPLY=($(compgen -W \"$names\" -- \"$cur\"))\n"
		"\t\treturn 0\n"
		"\tfi\n"
		"\tlocal opts=$_vigil_r\n"
		"\t_vigil_children \"$_vigil_path\"\n"
		"\tif [[ -n $_vigil_r ]]; then\n"
		"\t\tCOMPREPLY=($(compgen -W \"$_vigil_r\" -- \"$cur\"))\n"
		"\t\treturn 0\n"
		"\tfi\n"
		"\tfor t in $opts; do\n"
		"\t\t[[ $t == @* ]] && _vigil_values \"${t#@}\" \"$cur\" \"\"\n"
		"\tdone\n"
		"\treturn 0\n"
		"}\n\n"
		"complete -F _vigil vigil\n");
}

static void gen_zsh(struct strbuf *o)
{
	strbuf_addstr(o, "#compdef vigil\n# zsh completion for vigil. Generated by 'vigil "
			 "completion zsh' from vigil's command table,\n# check registry and "
			 "configuration schema: do not edit, regenerate.\n\n");
	sh_data(o);
	strbuf_addstr(o, "_vigil_values() {\n"
			 "\tcase $1 in\n"
			 "\tcheck)\n"
			 "\t\tcompset -P '*,'\n"
			 "\t\tcompadd -- ${=_vigil_checks} ;;\n"
			 "\tkey) compadd -S = -- ${=_vigil_keys} ;;\n"
			 "\tcmd) compadd -- ${=_vigil_cmds} ;;\n"
			 "\tfile) _files ;;\n"
			 "\tdir) _files -/ ;;\n"
			 "\tany) _message 'a value' ;;\n"
			 "\t*) compadd -- ${(s:|:)1} ;;\n"
			 "\tesac\n"
			 "}\n\n"
			 "_vigil() {\n"
			 "\tlocal t opts\n"
			 "\tlocal -a names\n"
			 "\t_vigil_where \"${(@)words[2,CURRENT-1]}\"\n"
			 "\tif [[ -z $_vigil_want && $PREFIX == --*=* ]]; then\n"
			 "\t\t_vigil_kind \"$_vigil_path\" \"${PREFIX%%=*}\"\n"
			 "\t\t_vigil_want=$_vigil_r\n"
			 "\t\tcompset -P '*='\n"
			 "\tfi\n"
			 "\tif [[ -n $_vigil_want ]]; then\n"
			 "\t\t_vigil_values \"$_vigil_want\"\n"
			 "\t\treturn\n"
			 "\tfi\n"
			 "\t_vigil_opts \"$_vigil_path\"\n"
			 "\topts=$_vigil_r\n"
			 "\tif [[ $PREFIX == -* ]]; then\n"
			 "\t\tfor t in ${=opts}; do\n"
			 "\t\t\t[[ $t == -* ]] && names+=(${t%%=*})\n"
			 "\t\tdone\n"
			 "\t\tcompadd -- $names\n"
			 "\t\treturn\n"
			 "\tfi\n"
			 "\t_vigil_children \"$_vigil_path\"\n"
			 "\tif [[ -n $_vigil_r ]]; then\n"
			 "\t\tcompadd -- ${=_vigil_r}\n"
			 "\t\treturn\n"
			 "\tfi\n"
			 "\tfor t in ${=opts}; do\n"
			 "\t\t[[ $t == @* ]] && _vigil_values \"${t#@}\"\n"
			 "\tdone\n"
			 "}\n\n"
			 "if [[ $funcstack[1] == _vigil ]]; then\n"
			 "\t_vigil \"$@\"\n"
			 "else\n"
			 "\tcompdef _vigil vigil\n"
			 "fi\n");
}

/* s as a fish single-quoted word */
static void fish_quote(struct strbuf *o, const char *s)
{
	strbuf_addch(o, '\'');
	for (; *s; s++) {
		if (*s == '\'' || *s == '\\')
			strbuf_addch(o, '\\');
		strbuf_addch(o, *s);
	}
	strbuf_addch(o, '\'');
}

/* One 'complete' line for the option word t ("--only=check", "-c=key", "--json") of path. */
static void fish_option(struct strbuf *o, const char *path, const char *t, size_t len)
{
	const char *eq = memchr(t, '=', len);
	size_t nl = eq ? (size_t)(eq - t) : len;
	strbuf_addstr(o, "complete -c vigil -n ");
	struct strbuf cond = STRBUF_INIT;
	strbuf_addf(&cond, "__vigil_at '%s'", path);
	fish_quote(o, cond.buf);
	strbuf_release(&cond);
	if (t[1] == '-')
		strbuf_addf(o, " -l %.*s", (int)nl - 2, t + 2);
	else
		strbuf_addf(o, " -s %.*s", (int)nl - 1, t + 1);
	if (eq) {
		const char *k = eq + 1;
		size_t kl = len - nl - 1;
		if ((kl == 4 && !memcmp(k, "file", 4)) || (kl == 3 && !memcmp(k, "dir", 3)))
			strbuf_addstr(o, " -r -F");
		else if (kl == 5 && !memcmp(k, "check", 5))
			strbuf_addstr(o, " -x -a '(__vigil_checks)'");
		else if (kl == 3 && !memcmp(k, "key", 3))
			strbuf_addstr(o, " -x -a '(__vigil_keys)'");
		else if (kl == 3 && !memcmp(k, "any", 3))
			strbuf_addstr(o, " -x");
		else {
			strbuf_addstr(o, " -x -a '");
			for (size_t i = 0; i < kl; i++)
				strbuf_addch(o, k[i] == '|' ? ' ' : k[i]);
			strbuf_addch(o, '\'');
		}
	}
	strbuf_addch(o, '\n');
}

static void gen_fish(struct strbuf *o)
{
	struct strbuf w = STRBUF_INIT;
	strbuf_addstr(o,
		      "# fish completion for vigil. Generated by 'vigil completion fish' from "
		      "vigil's command table,\n# check registry and configuration schema: do not "
		      "edit, regenerate.\n\n");
	strbuf_addstr(o, "function __vigil_children\n\tswitch \"$argv[1]\"\n");
	for (size_t i = 0; i < comp_table_nr; i++) {
		strbuf_reset(&w);
		comp_children(comp_table[i].path, &w);
		if (w.len)
			strbuf_addf(o, "\t\tcase '%s'\n\t\t\tstring split ' ' -- '%s'\n",
				    comp_table[i].path, w.buf);
	}
	strbuf_addstr(o, "\tend\nend\n\n"
			 "# the command path typed so far (\"fabric burnin\")\n"
			 "function __vigil_path\n"
			 "\tset -l words (commandline -opc)\n"
			 "\tset -l path ''\n"
			 "\tfor w in $words[2..-1]\n"
			 "\t\tstring match -q -- '-*' $w; and continue\n"
			 "\t\tif contains -- $w (__vigil_children $path)\n"
			 "\t\t\tset path (string trim -- \"$path $w\")\n"
			 "\t\tend\n"
			 "\tend\n"
			 "\techo $path\n"
			 "end\n\n"
			 "function __vigil_at\n"
			 "\tset -l p (__vigil_path)\n"
			 "\ttest \"$p\" = \"$argv[1]\"\n"
			 "end\n\n"
			 "# check names, after the comma list typed so far\n"
			 "function __vigil_checks\n"
			 "\tset -l cur (commandline -ct)\n"
			 "\tset -l head (string match -r -- '^.*,' $cur)\n"
			 "\tfor c in ");
	strbuf_reset(&w);
	add_checks(&w);
	strbuf_addf(o,
		    "%s\n\t\techo \"$head$c\"\n\tend\nend\n\nfunction __vigil_keys\n"
		    "\tfor k in ",
		    w.buf);
	strbuf_reset(&w);
	add_keys(&w);
	strbuf_addf(o, "%s\n\t\techo $k=\n\tend\nend\n\ncomplete -c vigil -f\n", w.buf);
	for (size_t i = 0; i < comp_table_nr; i++) {
		const char *path = comp_table[i].path;
		strbuf_reset(&w);
		comp_children(path, &w);
		for (const char *p = w.buf; *p;) {
			size_t n = strcspn(p, " ");
			struct strbuf child = STRBUF_INIT, cond = STRBUF_INIT;
			strbuf_addf(&child, "%s%s%.*s", path, *path ? " " : "", (int)n, p);
			strbuf_addf(&cond, "__vigil_at '%s'", path);
			strbuf_addstr(o, "complete -c vigil -n ");
			fish_quote(o, cond.buf);
			strbuf_addf(o, " -a %.*s", (int)n, p);
			const char *sum = summary_of(child.buf);
			if (sum) {
				strbuf_addstr(o, " -d ");
				fish_quote(o, sum);
			}
			strbuf_addch(o, '\n');
			strbuf_release(&child);
			strbuf_release(&cond);
			p += n;
			p += *p == ' ';
		}
		for (const char *t = comp_table[i].opts; *t;) {
			size_t n = strcspn(t, " ");
			if (t[0] == '-')
				fish_option(o, path, t, n);
			else if (t[0] == '@') {
				strbuf_addstr(o, "complete -c vigil -n ");
				struct strbuf cond = STRBUF_INIT;
				strbuf_addf(&cond, "__vigil_at '%s'", path);
				fish_quote(o, cond.buf);
				strbuf_release(&cond);
				if (!strncmp(t, "@cmd", n))
					strbuf_addstr(o, " -a '(__vigil_children \"\") config'\n");
				else
					strbuf_addstr(o, " -F\n");
			}
			t += n;
			t += *t == ' ';
		}
	}
	strbuf_release(&w);
}

int comp_script(const char *shell, struct strbuf *out)
{
	if (!strcmp(shell, "bash"))
		gen_bash(out);
	else if (!strcmp(shell, "zsh"))
		gen_zsh(out);
	else if (!strcmp(shell, "fish"))
		gen_fish(out);
	else
		return -1;
	return 0;
}

int cmd_completion(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		if (is_help_arg(argv[i])) {
			fputs(completion_usage, stdout);
			return EXIT_HEALTHY;
		}
	if (argc != 2) {
		usage_error("completion",
			    argc < 2 ? "which shell? (bash, zsh or fish)" : "one shell at a time");
		return EXIT_USAGE;
	}
	struct strbuf out = STRBUF_INIT;
	/* cmd_dispatch refused any other word already */
	comp_script(argv[1], &out);
	fwrite(out.buf, 1, out.len, stdout);
	strbuf_release(&out);
	if (fflush(stdout) || ferror(stdout)) {
		fprintf(stderr, "vigil completion: cannot write the script: %s\n", strerror(errno));
		return EXIT_UNKNOWN;
	}
	return EXIT_HEALTHY;
}
