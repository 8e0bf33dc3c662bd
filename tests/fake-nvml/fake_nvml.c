/* fake_nvml.c: placeholder; the snapshot-serving fake NVML library replaces this. */
int nvmlInit_v2(void);
int nvmlInit_v2(void)
{
	return 9; /* NVML_ERROR_DRIVER_NOT_LOADED */
}
