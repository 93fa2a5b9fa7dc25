# Generic timing constraint for any gpurtl block (SDC: OpenSTA, Vivado/Quartus
# style flows). Every block has one clock input, clk_i; the period is the
# design target (200 MHz here). The iCE40 and ECP5 flows of `gpurtl synth` use
# ice40-hx8k.pcf and ecp5-25k.lpf beside this file.
create_clock -name clk_i -period 5.000 [get_ports clk_i]
set_input_delay  0.0 -clock clk_i [delete_from_collection [all_inputs] [get_ports clk_i]]
set_output_delay 0.0 -clock clk_i [all_outputs]
