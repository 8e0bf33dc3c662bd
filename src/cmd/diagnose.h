/*
 * diagnose.h: the subcommands of 'vigil diagnose' that live in their own files. diagnose.c
 * dispatches to them; 'logs' is src/cmd/diagnose_logs.c.
 */
#ifndef VIGIL_CMD_DIAGNOSE_H
#define VIGIL_CMD_DIAGNOSE_H

int diag_logs_main(int argc, char **argv);
int diag_hang_main(int argc, char **argv);

#endif
