// ECP5 body of {{ name }}: one MULT18X18D with its operand registers
// (REG_INPUTA_CLK, REG_INPUTB_CLK) and product register (REG_OUTPUT_CLK)
// on CLK0, so both stages sit inside the DSP. Same ports and timing as
// {{ name }}.v, which is what simulation uses (there is no open MULT18X18D
// simulation model); this file is checked by synthesis only.
`default_nettype none
module {{ name }} (
  input  wire {{ "{:7}"|format("") }} clk_i,
  input  wire {{ "{:7}"|format(a_range) }} a_i,
  input  wire {{ "{:7}"|format(b_range) }} b_i,
  output wire {{ "{:7}"|format(p_range) }} p_o
);
  // The operands, sign-extended to the DSP's 18 bits.
  wire [17:0] a18 = {{ "{{" }}{{ dsp_in - wa }}{a_i[{{ wa - 1 }}]}}, a_i};
  wire [17:0] b18 = {{ "{{" }}{{ dsp_in - wb }}{b_i[{{ wb - 1 }}]}}, b_i};
  wire [35:0] p36;
  assign p_o = p36[{{ wp - 1 }}:0];
  MULT18X18D #(
    .REG_INPUTA_CLK("CLK0"),
    .REG_INPUTB_CLK("CLK0"),
    .REG_OUTPUT_CLK("CLK0"),
    .GSR("DISABLED")
  ) u_mult18 (
    {% for i in 0..dsp_in %}.A{{ i }}(a18[{{ i }}]){% if !loop.last %}, {% endif %}{% endfor %},
    {% for i in 0..dsp_in %}.B{{ i }}(b18[{{ i }}]){% if !loop.last %}, {% endif %}{% endfor %},
    .SIGNEDA(1'b1), .SIGNEDB(1'b1), .SOURCEA(1'b0), .SOURCEB(1'b0),
    .CLK0(clk_i), .CE0(1'b1), .RST0(1'b0),
    {% for i in 0..2 * dsp_in %}.P{{ i }}(p36[{{ i }}]){% if !loop.last %}, {% endif %}{% endfor %}
  );
endmodule
`default_nettype wire
