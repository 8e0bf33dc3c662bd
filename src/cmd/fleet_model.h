/* fleet_model.h: 'vigil fleet model' and 'vigil fleet lemons' (fleet_model.c), for fleet.c. */
#ifndef VIGIL_CMD_FLEET_MODEL_H
#define VIGIL_CMD_FLEET_MODEL_H

int fleet_model_cmd(int argc, char **argv);
int fleet_lemons_cmd(int argc, char **argv);

#endif
