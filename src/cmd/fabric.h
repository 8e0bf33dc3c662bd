/*
 * fabric.h: the subcommands of 'vigil fabric' (src/cmd/fabric.c dispatches to them). Each
 * takes (argc, argv) with argv[0] its own name ("ufm", "links", "plan", "run").
 */
#ifndef VIGIL_CMD_FABRIC_H
#define VIGIL_CMD_FABRIC_H

int cmd_fabric_ufm(int argc, char **argv);
int cmd_fabric_links(int argc, char **argv);
int cmd_fabric_burnin_plan(int argc, char **argv);
int cmd_fabric_burnin_run(int argc, char **argv);

#endif
