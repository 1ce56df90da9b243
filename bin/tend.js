#!/usr/bin/env node
import '../dist/cli/tend.js';
